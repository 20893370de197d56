// The portal's background jobs (docs/reports.md "Jobs") on the shared job queue: report exports,
// and every minute the sweep that re-queues exports whose worker died and removes expired files.
// Registered in the portal process (SVC_PORTAL_WORKER=true, the default) or in `npm run worker`.
import { join } from 'node:path';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { JobRunner } from '../../core/jobs/index.js';
import { removeExpiredExportFiles, runExport, sweepStalledExports } from '../../core/reports/index.js';
import type { KeyScope } from '../../core/usage/index.js';
import type { Principal } from '../../core/identity/index.js';
import { keyListScope } from './features/keys/scope.js';

export const exportQueue = 'report-export';
const sweepQueue = 'report-export-sweep';

/** Where export files are kept. */
export const exportsDir = (dataDir: string) => join(dataDir, 'exports');

/** What the jobs need. */
export interface PortalJobDeps {
  knex: Knex;
  logger: Logger;
  dataDir: string;
  clock: () => number;
}

/** The reach of a report's owner now: their role and place decide whose keys it covers. */
export async function ownerScope(knex: Knex, userId: number): Promise<KeyScope> {
  const row = (await knex('users').where({ id: userId }).first('id', 'role', 'status', 'organisation_id', 'department_id')) as
    | { id: number; role: Principal['role']; status: Principal['status']; organisation_id: number | null; department_id: number | null }
    | undefined;
  // An account gone or no longer active sees nothing.
  if (!row || row.status !== 'active') return { ownerUserId: -1 };
  return keyListScope({
    id: row.id,
    role: row.role,
    status: row.status,
    organisationId: row.organisation_id,
    departmentId: row.department_id,
  });
}

/** Opens the queue (every portal process sends jobs, whether or not it works them). */
export async function openJobRunner(databaseUrl: string, logger: Logger): Promise<JobRunner> {
  const runner = new JobRunner(databaseUrl, { logger });
  await runner.start();
  await runner.ensureQueue(exportQueue, { retryLimit: 2, expireInSeconds: 30 * 60 });
  return runner;
}

/** Starts working the portal's queues on `runner`. */
export async function workPortalJobs(runner: JobRunner, deps: PortalJobDeps): Promise<void> {
  const dir = exportsDir(deps.dataDir);
  await runner.work<{ exportId: string }>(
    exportQueue,
    (data) => runExport({ knex: deps.knex, dir, scopeOf: (id) => ownerScope(deps.knex, id), clock: deps.clock }, data.exportId),
    { retryLimit: 2, expireInSeconds: 30 * 60 },
  );
  await runner.every(sweepQueue, '* * * * *', async () => {
    const now = new Date(deps.clock());
    for (const exportId of await sweepStalledExports(deps.knex, now)) await runner.send(exportQueue, { exportId });
    const removed = await removeExpiredExportFiles(deps.knex, dir, now);
    if (removed > 0) deps.logger.info({ removed }, 'expired export files removed');
  });
}
