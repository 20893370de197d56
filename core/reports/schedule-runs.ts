// The runs of scheduled reports as their owner and recipients see them (docs/reports.md
// "Schedules"): what ran when, whether it was sent or why it failed, the file while it is kept,
// and who reviewed it.
import type { Knex } from 'knex';

/** One run as the runs page and JSON show it. */
export interface RunView {
  run_id: number;
  schedule_id: number;
  report_id: number;
  report_name: string;
  /** True when the caller owns the schedule; false when the run was sent to them. */
  owned: boolean;
  due_at: string;
  /** `queued`, `running`, `sent` (to at least one person), `skipped` (reaching no one, or its owner left the organisation; `error` says why) or `failed`. */
  state: string;
  recipients: number;
  error: string | null;
  finished_at: string | null;
  /** The CSV while it is kept (a sent run, until its export expires); null otherwise. */
  download_url: string | null;
  reviewed_at: string | null;
  reviewed_by: number | null;
  /** The reviewer's display name, for the page. */
  reviewed_by_name: string | null;
}

interface RunRow {
  id: number;
  schedule_id: number;
  report_id: number;
  report_name: string;
  owner_user_id: number;
  due_at: Date;
  state: string;
  recipients: number;
  error: string | null;
  finished_at: Date | null;
  export_id: string | null;
  export_state: string | null;
  expires_at: Date | null;
  reviewed_at: Date | null;
  reviewed_by: number | null;
  reviewed_by_name: string | null;
}

const iso = (value: Date | null): string | null => (value === null ? null : new Date(value).toISOString());

/**
 * The latest runs (newest due time first, at most `limit`) of the schedules `userId` owns or
 * receives. A recipient sees the runs of a schedule that names them, whoever owns it.
 */
export async function listRuns(knex: Knex, userId: number, now: Date, limit = 100): Promise<RunView[]> {
  const rows = (await knex('schedule_runs as r')
    .join('report_schedules as s', 's.id', 'r.schedule_id')
    .join('saved_reports as p', 'p.id', 's.report_id')
    .leftJoin('report_exports as e', 'e.id', 'r.export_id')
    .leftJoin('users as u', 'u.id', 'r.reviewed_by')
    // The owner's runs; and those actually sent to the caller while they are still an active
    // member of the organisation the schedule was made in (docs/reports.md "Schedules").
    .where((w) =>
      w
        .where('s.owner_user_id', userId)
        .orWhere((sent) =>
          sent
            .whereRaw('r.recipient_user_ids @> ?::jsonb', [JSON.stringify([userId])])
            .whereExists((m) =>
              m
                .select(knex.raw('1'))
                .from('users as m')
                .where('m.id', userId)
                .andWhere('m.status', 'active')
                .whereNull('m.deleted_at')
                .andWhereRaw('m.organisation_id = s.organisation_id'),
            ),
        ),
    )
    .orderBy([
      { column: 'r.due_at', order: 'desc' },
      { column: 'r.id', order: 'desc' },
    ])
    .limit(limit)
    .select(
      'r.id',
      'r.schedule_id',
      's.report_id',
      'p.name as report_name',
      's.owner_user_id',
      'r.due_at',
      'r.state',
      'r.recipients',
      'r.error',
      'r.finished_at',
      'r.export_id',
      'e.state as export_state',
      'e.expires_at',
      'r.reviewed_at',
      'r.reviewed_by',
      'u.display_name as reviewed_by_name',
    )) as RunRow[];
  return rows.map((row) => {
    const kept =
      row.state === 'sent' &&
      row.export_id !== null &&
      row.export_state === 'succeeded' &&
      (row.expires_at === null || new Date(row.expires_at) > now);
    return {
      run_id: row.id,
      schedule_id: row.schedule_id,
      report_id: row.report_id,
      report_name: row.report_name,
      owned: row.owner_user_id === userId,
      due_at: new Date(row.due_at).toISOString(),
      state: row.state,
      recipients: row.recipients,
      error: row.error,
      finished_at: iso(row.finished_at),
      download_url: kept ? `/dashboard/reports/exports/${row.export_id}/download` : null,
      reviewed_at: iso(row.reviewed_at),
      reviewed_by: row.reviewed_by,
      reviewed_by_name: row.reviewed_by_name,
    };
  });
}
