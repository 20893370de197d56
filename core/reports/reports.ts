// Saved reports (docs/reports.md): rows of `saved_reports`, each owned by the user who made it and
// visible to them only; what a report covers is the owner's reach at the moment it runs.
import type { Knex } from 'knex';
import { ApiError } from '../errors/index.js';
import { reportDefinition, type ReportDefinition, type ReportKind, type SavedReport } from './definition.js';

interface Row {
  id: number;
  owner_user_id: number;
  name: string;
  kind: ReportKind;
  definition: ReportDefinition | string;
  created_at: Date;
  updated_at: Date;
}

function present(row: Row): SavedReport {
  const stored = typeof row.definition === 'string' ? (JSON.parse(row.definition) as unknown) : row.definition;
  return {
    id: row.id,
    owner_user_id: row.owner_user_id,
    name: row.name,
    kind: row.kind,
    definition: reportDefinition.parse(stored),
    created_at: new Date(row.created_at).toISOString(),
    updated_at: new Date(row.updated_at).toISOString(),
  };
}

const noSuchReport = () => new ApiError('not_found', { param: 'report_id', humanMessage: 'You have no saved report with this id' });

/**
 * Saved reports one person may keep: the hub lists them all (no paging needed), and a 201st is
 * refused rather than hidden off the end of the list.
 */
export const maxReportsPerOwner = 200;

/** The owner's reports, newest first (all of them: at most `maxReportsPerOwner`). */
export async function listReports(knex: Knex, ownerUserId: number): Promise<SavedReport[]> {
  return ((await knex('saved_reports').where({ owner_user_id: ownerUserId }).orderBy('id', 'desc').limit(maxReportsPerOwner)) as Row[]).map(
    present,
  );
}

/** The report when `ownerUserId` owns it; otherwise 404 (as for one that does not exist). */
export async function findReport(knex: Knex, ownerUserId: number, id: number): Promise<SavedReport> {
  if (id > 2_147_483_647) throw noSuchReport();
  const row = (await knex('saved_reports').where({ id, owner_user_id: ownerUserId }).first()) as Row | undefined;
  if (!row) throw noSuchReport();
  return present(row);
}

export async function createReport(
  knex: Knex,
  input: { ownerUserId: number; name: string; kind: ReportKind; definition: ReportDefinition },
): Promise<SavedReport> {
  const row = await knex.transaction(async (trx) => {
    // One owner's creations in turn (the owner's row locked), so two at once cannot pass the limit together.
    await trx('users').where({ id: input.ownerUserId }).forUpdate().first('id');
    const [{ count }] = (await trx('saved_reports').where({ owner_user_id: input.ownerUserId }).count({ count: '*' })) as [
      { count: string | number },
    ];
    if (Number(count) >= maxReportsPerOwner) {
      throw new ApiError('conflict', {
        humanMessage: `You have ${maxReportsPerOwner} saved reports, as many as one person may keep: delete one you no longer need first`,
      });
    }
    const [inserted] = (await trx('saved_reports')
      .insert({ owner_user_id: input.ownerUserId, name: input.name, kind: input.kind, definition: JSON.stringify(input.definition) })
      .returning('*')) as Row[];
    return inserted!;
  });
  return present(row);
}

export async function renameReport(knex: Knex, ownerUserId: number, id: number, name: string): Promise<SavedReport> {
  await findReport(knex, ownerUserId, id);
  const [row] = (await knex('saved_reports')
    .where({ id, owner_user_id: ownerUserId })
    .update({ name, updated_at: knex.fn.now() })
    .returning('*')) as Row[];
  return present(row!);
}

/** Deletes the report with its export jobs (their files are removed by the caller). */
export async function deleteReport(knex: Knex, ownerUserId: number, id: number): Promise<string[]> {
  await findReport(knex, ownerUserId, id);
  return knex.transaction(async (trx) => {
    const exports = (await trx('report_exports').where({ report_id: id }).pluck('id')) as string[];
    await trx('saved_reports').where({ id, owner_user_id: ownerUserId }).delete();
    return exports;
  });
}
