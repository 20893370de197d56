// Export jobs (docs/reports.md "Exports"): one report's rows written as CSV in the background,
// kept in PostgreSQL as ordered 1 MiB chunks (no shared disk between the worker and the portal
// replica that serves the download). The job row is the truth a person watches (state, progress, rows, bytes); the job
// queue only carries "run export X" and may deliver it more than once, so `runExport` is
// idempotent: a finished job is left alone, a started one restarts from the first row into a
// fresh file. Rows are read in pages and written with back-pressure, so memory stays flat
// whatever the size. The worker checks the cancel flag and beats its heartbeat between pages; a
// job whose heartbeat stopped (its worker died) is retried or failed by `sweepStalledExports`,
// never left "running".
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import type { Knex } from 'knex';
import { ApiError } from '../errors/index.js';
import { exactUsdText } from '../budget/usage.js';
import type { KeyScope } from '../usage/index.js';
import type { SavedReport } from './definition.js';
import { findReport } from './reports.js';
import { runReport, type Cell } from './rows.js';

export const exportStates = ['queued', 'running', 'succeeded', 'failed', 'cancelled'] as const;
export type ExportState = (typeof exportStates)[number];

/** How long a finished export can be downloaded. */
export const exportLifetimeMs = 7 * 86_400_000;
/** A running export whose heartbeat is older than this has lost its worker. */
export const stalledAfterMs = 60_000;
/** Runs of one export before it is failed for good. */
export const maxExportAttempts = 3;

export interface ExportView {
  job_id: string;
  report_id: number;
  format: 'csv';
  state: ExportState;
  /** 0 to 1 while running (0 until the rows are counted), 1 once succeeded. */
  progress: number;
  rows_written: number;
  total_rows: number | null;
  bytes_written: number;
  error: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  expires_at: string | null;
  download_url: string | null;
}

interface Row {
  id: string;
  report_id: number;
  owner_user_id: number;
  format: 'csv';
  state: ExportState;
  cancel_requested: boolean;
  total_rows: string | number | null;
  rows_written: string | number;
  bytes_written: string | number;
  error: string | null;
  attempts: number;
  created_at: Date;
  started_at: Date | null;
  heartbeat_at: Date | null;
  finished_at: Date | null;
  expires_at: Date | null;
}

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);

function present(row: Row, now: Date): ExportView {
  const total = row.total_rows === null ? null : Number(row.total_rows);
  const written = Number(row.rows_written);
  const downloadable = row.state === 'succeeded' && row.expires_at !== null && new Date(row.expires_at) > now;
  return {
    job_id: row.id,
    report_id: row.report_id,
    format: row.format,
    state: row.state,
    // 0 until the run has counted its rows (a queued job, or one just started).
    progress: row.state === 'succeeded' ? 1 : total === null || total === 0 ? 0 : Math.min(1, written / total),
    rows_written: written,
    total_rows: total,
    bytes_written: Number(row.bytes_written),
    error: row.error,
    created_at: new Date(row.created_at).toISOString(),
    started_at: iso(row.started_at),
    finished_at: iso(row.finished_at),
    expires_at: iso(row.expires_at),
    download_url: downloadable ? `/dashboard/reports/exports/${row.id}/download` : null,
  };
}

/** Bytes of CSV per stored chunk. */
const chunkBytes = 1024 * 1024;

const noSuchExport = () => new ApiError('not_found', { param: 'job_id', humanMessage: 'You have no export job with this id' });
const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The job when `ownerUserId` owns it; otherwise 404. */
export async function findExport(knex: Knex, ownerUserId: number, id: string, now: Date): Promise<ExportView> {
  if (!uuidPattern.test(id)) throw noSuchExport();
  const row = (await knex('report_exports').where({ id, owner_user_id: ownerUserId }).first()) as Row | undefined;
  if (!row) throw noSuchExport();
  return present(row, now);
}

/** The report's latest export jobs (at most 20). */
export async function listExports(knex: Knex, ownerUserId: number, reportId: number, now: Date): Promise<ExportView[]> {
  const rows = (await knex('report_exports')
    .where({ owner_user_id: ownerUserId, report_id: reportId })
    .orderBy('created_at', 'desc')
    .limit(20)) as Row[];
  return rows.map((r) => present(r, now));
}

/** Records a queued export of the caller's report; the caller queues `{exportId}` for the worker. */
export async function createExport(knex: Knex, report: SavedReport, scheduleRunId: number | null = null): Promise<string> {
  const id = randomUUID();
  await knex('report_exports').insert({
    id,
    report_id: report.id,
    owner_user_id: report.owner_user_id,
    format: 'csv',
    state: 'queued',
    schedule_run_id: scheduleRunId,
  });
  return id;
}

/** Asks a queued or running export to stop; it is cancelled within one page of rows. */
export async function cancelExport(knex: Knex, ownerUserId: number, id: string, now: Date): Promise<ExportView> {
  const job = await findExport(knex, ownerUserId, id, now);
  if (job.state === 'queued')
    await knex('report_exports').where({ id, state: 'queued' }).update({ state: 'cancelled', cancel_requested: true, finished_at: now });
  else if (job.state === 'running') await knex('report_exports').where({ id }).update({ cancel_requested: true });
  else throw new ApiError('conflict', { humanMessage: `This export has already ${job.state === 'succeeded' ? 'finished' : job.state}` });
  return findExport(knex, ownerUserId, id, now);
}

/**
 * The CSV of a finished, unexpired export, streamed chunk by chunk from PostgreSQL: for its owner,
 * or a recipient of the scheduled run that made it (`mayDownload`, core/reports/schedules.ts).
 */
export async function exportDownload(
  knex: Knex,
  userId: number,
  id: string,
  now: Date,
  mayDownload: (userId: number, id: string) => Promise<boolean>,
) {
  if (!uuidPattern.test(id) || !(await mayDownload(userId, id))) throw noSuchExport();
  const row = (await knex('report_exports').where({ id }).first()) as Row;
  const job = present(row, now);
  if (job.state !== 'succeeded') throw new ApiError('conflict', { humanMessage: `This export is ${job.state}, not ready to download` });
  if (!job.download_url)
    throw new ApiError('not_found', { param: 'job_id', humanMessage: 'This export has expired; export the report again' });
  async function* chunks() {
    for (let seq = 0; ; seq++) {
      const chunk = (await knex('report_export_chunks').where({ export_id: id, seq }).first('data')) as { data: Buffer } | undefined;
      if (!chunk) return;
      yield chunk.data;
    }
  }
  return { stream: Readable.from(chunks()), bytes: job.bytes_written, job };
}

/**
 * A report cell as text: a number in its shortest exact decimal form, never with an exponent
 * (4e-8 USD is `0.00000004`; costs are exact to the nano-dollar); empty for no value. The CSV
 * and the report's page write cells alike.
 */
export function cellText(value: Cell): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'number' && !Number.isInteger(value) && /e/i.test(String(value))) return exactUsdText(value);
  return String(value);
}

function csvField(value: Cell): string {
  if (value === null || value === undefined) return '';
  let text = cellText(value);
  // A spreadsheet must never run a field as a formula (names are chosen by users).
  if (typeof value === 'string' && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** One CSV line (RFC 4180, CRLF). */
export const csvLine = (cells: readonly Cell[]) => `${cells.map(csvField).join(',')}\r\n`;

export interface ExportRunDeps {
  knex: Knex;
  /** The owner's reach now (their keys, department, organisation or everything). */
  scopeOf: (ownerUserId: number) => Promise<KeyScope>;
  clock: () => number;
  /** Rows between progress updates, heartbeats and cancel checks. */
  pageRows?: number;
}

/** Runs one export to the end (idempotent; see the file comment). */
export async function runExport(deps: ExportRunDeps, id: string): Promise<void> {
  const { knex } = deps;
  const now = () => new Date(deps.clock());
  const row = (await knex('report_exports').where({ id }).first()) as Row | undefined;
  if (!row || row.state === 'succeeded' || row.state === 'failed' || row.state === 'cancelled') return;
  if (row.cancel_requested) {
    await knex('report_exports').where({ id }).update({ state: 'cancelled', finished_at: now() });
    return;
  }
  const report = await findReport(knex, row.owner_user_id, row.report_id).catch(() => undefined);
  if (!report) {
    await knex('report_exports').where({ id }).update({ state: 'failed', error: 'the report was deleted', finished_at: now() });
    return;
  }
  await knex('report_exports')
    .where({ id })
    .update({ state: 'running', started_at: now(), heartbeat_at: now(), rows_written: 0, bytes_written: 0, attempts: row.attempts + 1 });
  const run = runReport(knex, report, await deps.scopeOf(row.owner_user_id), now());
  await knex('report_exports')
    .where({ id })
    .update({ total_rows: await run.total() });
  // A restarted run starts from the first row: what an earlier run stored goes.
  await knex('report_export_chunks').where({ export_id: id }).delete();
  let pending: string[] = [];
  let pendingBytes = 0;
  let seq = 0;
  let rows = 0;
  let bytes = 0;
  const flush = async () => {
    if (pending.length === 0) return;
    await knex('report_export_chunks').insert({ export_id: id, seq: seq++, data: Buffer.from(pending.join(''), 'utf8') });
    pending = [];
    pendingBytes = 0;
  };
  const write = async (text: string) => {
    const size = Buffer.byteLength(text);
    bytes += size;
    pendingBytes += size;
    pending.push(text);
    if (pendingBytes >= chunkBytes) await flush();
  };
  const page = deps.pageRows ?? 2_000;
  await write(csvLine(run.header));
  for await (const cells of run.rows()) {
    await write(csvLine(cells));
    rows++;
    if (rows % page === 0) {
      const [state] = (await knex('report_exports')
        .where({ id })
        .update({ rows_written: rows, bytes_written: bytes, heartbeat_at: now() })
        .returning('cancel_requested')) as { cancel_requested: boolean }[];
      if (state?.cancel_requested) {
        await knex('report_export_chunks').where({ export_id: id }).delete();
        await knex('report_exports').where({ id }).update({ state: 'cancelled', finished_at: now() });
        return;
      }
    }
  }
  await flush();
  await knex('report_exports')
    .where({ id })
    .update({
      state: 'succeeded',
      rows_written: rows,
      bytes_written: bytes,
      total_rows: rows,
      finished_at: now(),
      heartbeat_at: now(),
      expires_at: new Date(deps.clock() + exportLifetimeMs),
    });
}

/**
 * Exports whose worker died (heartbeat older than `stalledAfterMs`): re-queued while attempts
 * remain (the ids are returned, for the caller to queue), else failed with the reason.
 */
export async function sweepStalledExports(knex: Knex, now: Date, staleMs = stalledAfterMs): Promise<string[]> {
  const stale = (await knex('report_exports')
    .where({ state: 'running' })
    .andWhere('heartbeat_at', '<', new Date(now.getTime() - staleMs))
    .select('id', 'attempts')) as { id: string; attempts: number }[];
  const retry: string[] = [];
  for (const job of stale) {
    if (job.attempts >= maxExportAttempts) {
      await knex('report_exports')
        .where({ id: job.id, state: 'running' })
        .update({ state: 'failed', error: `its worker stopped responding ${maxExportAttempts} times`, finished_at: now });
    } else {
      const moved = await knex('report_exports').where({ id: job.id, state: 'running' }).update({ state: 'queued', heartbeat_at: null });
      if (moved > 0) retry.push(job.id);
    }
  }
  return retry;
}

/** Deletes the stored CSV of expired exports (download_url is null from expiry on). */
export async function removeExpiredExports(knex: Knex, now: Date): Promise<number> {
  return knex('report_export_chunks')
    .whereIn('export_id', knex('report_exports').select('id').where({ state: 'succeeded' }).andWhere('expires_at', '<', now))
    .delete();
}
