// What a saved report is (docs/reports.md): a kind and its filters, validated in one place for
// the create route, the stored row and the export worker.
import { z } from 'zod';

export const reportKinds = ['usage', 'request_log'] as const;
export type ReportKind = (typeof reportKinds)[number];

export const reportGroupings = ['none', 'model', 'key', 'supplier'] as const;

/** The saved filters; `days` back from the moment the report is run (UTC days). */
export const reportDefinition = z.strictObject({
  days: z.number().int().min(1).max(366).default(30),
  /** Usage: one row per day and group (spend by model, key or supplier). */
  group_by: z.enum(reportGroupings).default('none'),
  /** Request log: only this model, this key (its portal id), this status class (2, 4, 5) or status. */
  model: z.string().min(1).max(200).optional(),
  key_id: z.number().int().positive().max(2_147_483_647).optional(),
  status: z
    .union([z.literal(2), z.literal(3), z.literal(4), z.literal(5), z.number().int().min(100).max(599)], {
      message: 'must be a status class (2, 3, 4, 5) or an HTTP status',
    })
    .optional(),
});
export type ReportDefinition = z.infer<typeof reportDefinition>;

/** The filters each kind applies (`days` is every kind's). */
const kindFilters: Record<ReportKind, readonly (keyof ReportDefinition)[]> = {
  usage: ['days', 'group_by'],
  request_log: ['days', 'model', 'key_id', 'status'],
};

/**
 * The filters given that a report of `kind` would not apply — saved, they would look as if they
 * narrowed the numbers while every row is counted. Refused instead (422 naming each). A
 * `group_by` of `none` asks for nothing and is not one of them.
 */
export function filtersNotApplied(kind: ReportKind, given: Partial<ReportDefinition>): (keyof ReportDefinition)[] {
  return (Object.keys(given) as (keyof ReportDefinition)[]).filter(
    (name) => given[name] !== undefined && !kindFilters[kind].includes(name) && !(name === 'group_by' && given.group_by === 'none'),
  );
}

/** A saved report as pages and JSON show it. */
export interface SavedReport {
  id: number;
  owner_user_id: number;
  name: string;
  kind: ReportKind;
  definition: ReportDefinition;
  created_at: string;
  updated_at: string;
}
