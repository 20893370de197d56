// A saved report's rows (docs/reports.md "Kinds"): the header and the rows of one run, produced
// in pages so an export of any size keeps memory flat, and the count an export's progress is
// measured against. The same rows feed the HTML view, the JSON projection, the direct CSV and
// the export jobs.
import type { Knex } from 'knex';
import {
  countRequests,
  eachRequest,
  requestLogCsvCells,
  requestLogCsvHeader,
  usageReport,
  type KeyScope,
  type RequestLogFilters,
} from '../usage/index.js';
import type { SavedReport } from './definition.js';

export type Cell = string | number | boolean | null | undefined;

export interface ReportRun {
  header: string[];
  /** Rows the run will produce (for progress). */
  total(): Promise<number>;
  rows(): AsyncGenerator<Cell[]>;
  from: Date;
  to: Date;
}

/** The UTC day range of a report run at `now`: the last `days` whole days, today included. */
export function reportRange(days: number, now: Date): { from: Date; to: Date } {
  const to = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1));
  return { from: new Date(to.getTime() - days * 86_400_000), to };
}

/** One run of `report` over the keys of `scope` (the owner's reach now). */
export function runReport(knex: Knex, report: SavedReport, scope: KeyScope, now: Date): ReportRun {
  const { from, to } = reportRange(report.definition.days, now);
  const d = report.definition;
  if (report.kind === 'usage') {
    const split = d.group_by === 'none' ? undefined : d.group_by;
    const load = () => usageReport(knex, { scope, from, to, granularity: 'day', ...(split && { split }) });
    let loaded: Awaited<ReturnType<typeof load>> | undefined;
    const report_ = async () => (loaded ??= await load());
    const flatten = (r: Awaited<ReturnType<typeof load>>): Cell[][] => {
      const label = new Map(r.groups.map((g) => [g.id, g.label]));
      return r.bins.flatMap((bin) =>
        split
          ? Object.entries(bin.groups ?? {}).map(([id, t]): Cell[] => [
              bin.start.slice(0, 10),
              label.get(id) ?? id,
              t.requests,
              t.errors,
              t.input_tokens,
              t.output_tokens,
              t.cost_usd,
            ])
          : bin.requests > 0
            ? [[bin.start.slice(0, 10), 'all', bin.requests, bin.errors, bin.input_tokens, bin.output_tokens, bin.cost_usd]]
            : [],
      );
    };
    return {
      header: ['day', split ?? 'group', 'requests', 'errors', 'input_tokens', 'output_tokens', 'cost_usd'],
      from,
      to,
      total: async () => flatten(await report_()).length,
      rows: async function* () {
        yield* flatten(await report_());
      },
    };
  }
  const filters: RequestLogFilters = {
    from,
    to,
    ...(d.model !== undefined && { model: d.model }),
    ...(d.key_id !== undefined && { keyNumber: d.key_id }),
    ...(d.status !== undefined && { status: d.status }),
  };
  return {
    // The request log's own CSV columns: one format for a request wherever it is exported.
    header: [...requestLogCsvHeader],
    from,
    to,
    total: () => countRequests(knex, scope, filters),
    rows: async function* () {
      for await (const r of eachRequest(knex, scope, filters, 2_000)) yield requestLogCsvCells(r);
    },
  };
}
