// The portal's background jobs (docs/reports.md "Jobs") on the shared job queue: report exports,
// and every minute the sweep that re-queues exports whose worker died and removes expired files.
// Registered in the portal process (SVC_PORTAL_WORKER=true, the default) or in `npm run worker`.
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { claimDueAlerts, markAlert, type DueAlert } from '../../core/budgets/index.js';
import { JobRunner } from '../../core/jobs/index.js';
import { connectionBounds, type Database } from '../../core/db/index.js';
import {
  claimDueRuns,
  createExport,
  findExport,
  findReport,
  findRun,
  activeRecipients,
  removeExpiredExports,
  runExport,
  sweepStalledExports,
} from '../../core/reports/index.js';
import { actionMessage, type Mailer } from './mail/mailer.js';

import type { KeyScope } from '../../core/usage/index.js';
import type { Principal } from '../../core/identity/index.js';
import { keyListScope } from './features/keys/scope.js';
import { formatUsd } from './web/usd.js';

export const exportQueue = 'report-export';
const sweepQueue = 'report-export-sweep';
const scheduleTickQueue = 'report-schedule-tick';
const budgetAlertsQueue = 'budget-alerts';
export const scheduleRunQueue = 'report-schedule-run';

/** What the jobs need. */
export interface PortalJobDeps {
  knex: Knex;
  logger: Logger;
  dataDir: string;
  clock: () => number;
  mailer: Mailer;
  /** The portal's public address, for the links in scheduled-report emails. */
  baseUrl: string;
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
export async function openJobRunner(database: Pick<Database, 'url' | 'kind'>, logger: Logger): Promise<JobRunner> {
  const runner = new JobRunner(database.url, { logger, connection: connectionBounds(database.kind) });
  await runner.start();
  await runner.ensureQueue(exportQueue, { retryLimit: 2, expireInSeconds: 30 * 60 });
  await runner.ensureQueue(scheduleRunQueue, { retryLimit: 2, expireInSeconds: 30 * 60 });
  return runner;
}

/** Starts working the portal's queues on `runner`. */
export async function workPortalJobs(runner: JobRunner, deps: PortalJobDeps): Promise<void> {
  await runner.work<{ exportId: string }>(
    exportQueue,
    (data) => runExport({ knex: deps.knex, scopeOf: (id) => ownerScope(deps.knex, id), clock: deps.clock }, data.exportId),
    { retryLimit: 2, expireInSeconds: 30 * 60 },
  );
  await runner.work<{ runId: number }>(scheduleRunQueue, (data) => runScheduledReport(deps, data.runId), {
    retryLimit: 2,
    expireInSeconds: 30 * 60,
  });
  // Every minute (pg-boss's clock fires it once across replicas; the run rows make it once anyway).
  await runner.every(scheduleTickQueue, '* * * * *', async () => {
    for (const runId of await claimDueRuns(deps.knex, new Date(deps.clock()))) await runner.send(scheduleRunQueue, { runId });
  });
  await runner.every(budgetAlertsQueue, '* * * * *', async () => {
    await deliverBudgetAlerts(deps);
  });
  await runner.every(sweepQueue, '* * * * *', async () => {
    const now = new Date(deps.clock());
    for (const exportId of await sweepStalledExports(deps.knex, now)) await runner.send(exportQueue, { exportId });
    const removed = await removeExpiredExports(deps.knex, now);
    if (removed > 0) deps.logger.info({ chunks: removed }, 'expired exports removed');
  });
}

/**
 * One scheduled run (idempotent, as every job): the report exported as its owner, then a link
 * emailed to each recipient still an active member of the organisation the schedule was made in —
 * never the data itself. A run whose owner is no longer in that organisation (or no longer active)
 * is skipped, not run over their new reach; one that would reach nobody is skipped too. The run
 * records whom it was actually sent to: they alone (and the owner) may open its file.
 */
export async function runScheduledReport(deps: PortalJobDeps, runId: number): Promise<void> {
  const { knex } = deps;
  const now = () => new Date(deps.clock());
  const run = await findRun(knex, runId);
  if (!run || run.state === 'sent' || run.state === 'failed' || run.state === 'skipped') return;
  const skip = (error: string) =>
    knex('schedule_runs')
      .where({ id: run.id })
      .update({ state: 'skipped', error, recipients: 0, recipient_user_ids: '[]', finished_at: now() });
  /** Why the run cannot go out now, or the people it goes to. */
  const reach = async (): Promise<{ why: string } | { id: number; email: string }[]> => {
    const owner = (await knex('users').where({ id: run.owner_user_id }).first('organisation_id', 'status', 'deleted_at')) as
      { organisation_id: number | null; status: string; deleted_at: Date | null } | undefined;
    if (!owner || owner.status !== 'active' || owner.deleted_at !== null) return { why: 'its owner is no longer an active user' };
    if (owner.organisation_id !== run.organisation_id) return { why: 'its owner is no longer in the organisation it was scheduled in' };
    const recipients = await activeRecipients(knex, run.recipient_user_ids, run);
    return recipients.length > 0 ? recipients : { why: 'none of its recipients is still an active member of the organisation' };
  };
  const before = await reach();
  if ('why' in before) return void (await skip(before.why));
  const report = await findReport(knex, run.owner_user_id, run.report_id);
  let exportId = run.export_id;
  if (!exportId) {
    exportId = await createExport(knex, report, run.id);
    await knex('schedule_runs').where({ id: run.id }).update({ export_id: exportId, state: 'running' });
  }
  await runExport({ knex, scopeOf: (id) => ownerScope(knex, id), clock: deps.clock }, exportId);
  const job = await findExport(knex, run.owner_user_id, exportId, now());
  if (job.state !== 'succeeded') {
    await knex('schedule_runs')
      .where({ id: run.id })
      .update({ state: 'failed', error: job.error ?? `the export ended ${job.state}`, finished_at: now() });
    return;
  }
  // Again after the export (people may have moved meanwhile): the list it is actually sent to.
  const recipients = await reach();
  if ('why' in recipients) return void (await skip(recipients.why));
  const owner = (await knex('users').where({ id: run.owner_user_id }).first('display_name')) as { display_name: string };
  for (const r of recipients)
    await deps.mailer.send(
      actionMessage(
        r.email,
        `Your scheduled report “${report.name}” is ready`,
        `${owner.display_name}'s scheduled report “${report.name}” ran for ${new Date(run.due_at).toISOString().slice(0, 16).replace('T', ' ')} UTC: ${job.rows_written.toLocaleString('en-US')} ${job.rows_written === 1 ? 'row' : 'rows'}.`,
        'Download the CSV',
        // The download itself: the job's page is its owner's, a recipient may only download.
        `${deps.baseUrl}/dashboard/reports/exports/${exportId}/download`,
        `Sign in to download it; the file is kept for 7 days. Only people the schedule names can open it. Every run of the schedules you receive: ${deps.baseUrl}/dashboard/reports/schedule-runs`,
      ),
    );
  await knex('schedule_runs')
    .where({ id: run.id })
    .update({
      state: 'sent',
      recipients: recipients.length,
      recipient_user_ids: JSON.stringify(recipients.map((r) => r.id)),
      finished_at: now(),
    });
}

/**
 * Budget alerts (docs/budgets.md): the thresholds crossed this month, claimed once per policy,
 * threshold and consenting recipient (however many workers run this at once), each mailed and its
 * delivery recorded — sent, or failed with the reason.
 */
export async function deliverBudgetAlerts(deps: PortalJobDeps): Promise<number> {
  const due = await claimDueAlerts(deps.knex, new Date(deps.clock()));
  // Spend can pass several thresholds between two runs (a burst, a first month): one email per
  // policy and recipient, for the highest, naming the others — not a 1% alert at 213%.
  const byRecipient = new Map<string, DueAlert[]>();
  for (const alert of due) {
    const key = `${alert.policyId}:${alert.recipientUserId}`;
    byRecipient.set(key, [...(byRecipient.get(key) ?? []), alert]);
  }
  for (const alerts of byRecipient.values()) {
    alerts.sort((a, b) => a.threshold - b.threshold);
    const alert = alerts.at(-1)!;
    const passed = alerts.slice(0, -1).map((a) => `${a.threshold}%`);
    const whose = alert.scope === 'user' ? 'Your monthly budget' : `${alert.subjectName}'s monthly budget`;
    const share = alert.amountUsd > 0 ? Math.floor((alert.spentUsd / alert.amountUsd) * 100) : 100;
    let outcome: { sent: true } | { sent: false; reason: string } = { sent: true };
    try {
      await deps.mailer.send(
        actionMessage(
          alert.email,
          `${whose} has reached ${alert.threshold}%`,
          // The portal's money format (up to 6 decimals): a $0.05 budget's 2% is $0.001, not "$0.00".
          `${whose} of ${formatUsd(alert.amountUsd)} has reached ${alert.threshold}%: ${formatUsd(alert.spentUsd)} spent this month (UTC), ` +
            `${share}% of it.${passed.length > 0 ? ` It passed your ${passed.join(', ')} alert${passed.length > 1 ? 's' : ''} too.` : ''}`,
          'See usage and budgets',
          `${deps.baseUrl}/dashboard/budgets`,
          'You receive budget alerts because you agreed to; you can stop them on the budgets page.',
        ),
      );
    } catch (error) {
      outcome = { sent: false, reason: error instanceof Error ? error.message : String(error) };
    }
    // The lower thresholds were told in the same email: recorded with its outcome.
    for (const each of alerts) await markAlert(deps.knex, each.alertId, outcome, new Date(deps.clock()));
  }
  return due.length;
}
