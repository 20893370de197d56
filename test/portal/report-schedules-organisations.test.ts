// Scheduled reports stay in the organisation they were scheduled in (docs/reports.md "Schedules";
// outside probe): a recipient moved to another organisation is not sent the run, does not see it
// and cannot download its file; a run whose owner moved is skipped with the reason instead of
// exporting the owner's new organisation; a run that reached nobody is not "sent".
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { claimDueRuns } from '../../core/reports/index.js';
import { runScheduledReport } from '../../portal/src/jobs.js';
import { startPortalHarness, type PortalHarness } from '../support/portal-harness.js';
import { signUp, type SignedInUser } from '../support/portal-users.js';

let portal: PortalHarness;
let acme: number;
let beta: number;
const knex = () => portal.database.knex;

beforeAll(async () => {
  portal = await startPortalHarness();
  const orgs = (await knex()('organisations')
    .insert([
      { name: 'Acme', slug: `acme-${Date.now()}` },
      { name: 'Beta', slug: `beta-${Date.now()}` },
    ])
    .returning('id')) as { id: number }[];
  [acme, beta] = orgs.map((o) => o.id) as [number, number];
});
afterAll(async () => {
  await portal?.close();
});

interface Run {
  run_id: number;
  state: string;
  recipients: number;
  error: string | null;
  download_url: string | null;
}
const runsOf = async (user: SignedInUser) =>
  ((await (await user.client.get('/dashboard/reports/schedule-runs', { accept: 'application/json' })).json()) as { data: Run[] }).data;

/** A daily schedule of a new usage report of `owner` to `recipients`, due now; its run claimed and run. */
async function scheduleAndRun(owner: SignedInUser, recipients: SignedInUser[], beforeRun: () => Promise<void> = async () => {}) {
  const created = await owner.client.postJson('/dashboard/reports', { name: `Usage ${Date.now()}`, kind: 'usage', days: 7 });
  const reportId = ((await created.json()) as { report: { id: number } }).report.id;
  const res = await owner.client.postJson('/dashboard/reports/schedules', {
    report_id: reportId,
    cadence: 'daily',
    time: '07:00',
    time_zone: 'UTC',
    recipients: recipients.map((r) => r.email),
  });
  expect(res.status, await res.clone().text()).toBe(201);
  const { schedule } = (await res.json()) as { schedule: { schedule_id: number } };
  await knex()('report_schedules')
    .where({ id: schedule.schedule_id })
    .update({ next_run_at: new Date(Date.now() - 1_000) });
  const [runId] = await claimDueRuns(knex(), new Date());
  await beforeRun();
  await runScheduledReport(
    {
      knex: knex(),
      logger: pino({ level: 'silent' }),
      dataDir: portal.portal.deps.settings.SVC_DATA_DIR,
      clock: Date.now,
      mailer: portal.portal.deps.mailer,
      baseUrl: portal.url,
    },
    runId!,
  );
  return runId!;
}

describe('scheduled reports and organisations', () => {
  it('a recipient moved out of the organisation is not sent the run and cannot see or download it', async () => {
    const owner = await signUp(portal, { organisationId: acme });
    const stays = await signUp(portal, { organisationId: acme });
    const moves = await signUp(portal, { organisationId: acme });
    const mailBefore = portal.mail.length;
    const runId = await scheduleAndRun(owner, [stays, moves], async () => {
      await knex()('users').where({ id: moves.id }).update({ organisation_id: beta });
    });
    const row = (await knex()('schedule_runs').where({ id: runId }).first('state', 'recipients', 'recipient_user_ids')) as {
      state: string;
      recipients: number;
      recipient_user_ids: number[];
    };
    expect(row).toMatchObject({ state: 'sent', recipients: 1, recipient_user_ids: [stays.id] });
    const mailed = portal.mail.slice(mailBefore).join('\n');
    expect(mailed).toContain(stays.email);
    expect(mailed).not.toContain(moves.email);
    const [run] = await runsOf(stays);
    expect(run).toMatchObject({ run_id: runId, state: 'sent', recipients: 1 });
    const path = run!.download_url!;
    expect((await stays.client.get(path)).status).toBe(200);
    expect((await owner.client.get(path)).status).toBe(200);
    expect(await runsOf(moves)).toEqual([]);
    expect((await moves.client.get(path)).status).toBe(404);
    expect((await moves.client.postJson(`/dashboard/reports/schedule-runs/${runId}/review`, {})).status).toBe(404);

    // A recipient who leaves after the run loses the file and the run too.
    await knex()('users').where({ id: stays.id }).update({ organisation_id: beta });
    expect((await stays.client.get(path)).status).toBe(404);
    expect(await runsOf(stays)).toEqual([]);
    // Back in the organisation, they see what was sent to them again.
    await knex()('users').where({ id: stays.id }).update({ organisation_id: acme });
    expect((await stays.client.get(path)).status).toBe(200);
  });

  it('a run that reaches nobody is skipped with the reason, not "sent" to 0', async () => {
    const owner = await signUp(portal, { organisationId: acme });
    const x8 = await signUp(portal, { organisationId: acme });
    const runId = await scheduleAndRun(owner, [x8], async () => {
      await knex()('users').where({ id: x8.id }).update({ organisation_id: beta });
    });
    const [run] = await runsOf(owner);
    expect(run).toMatchObject({ run_id: runId, state: 'skipped', recipients: 0, download_url: null });
    expect(run!.error).toMatch(/none of its recipients/);
    expect(await runsOf(x8)).toEqual([]);
    expect(Number(((await knex()('report_exports').where({ schedule_run_id: runId }).count({ n: '*' })) as { n: string }[])[0]!.n)).toBe(0);
  });

  it("a run whose owner moved to another organisation is skipped: it never exports the new organisation's data", async () => {
    const owner = await signUp(portal, { organisationId: acme, role: 'org_admin' });
    const member = await signUp(portal, { organisationId: acme });
    const mailBefore = portal.mail.length;
    const runId = await scheduleAndRun(owner, [member], async () => {
      await knex()('users').where({ id: owner.id }).update({ organisation_id: beta });
    });
    const row = (await knex()('schedule_runs').where({ id: runId }).first('state', 'error', 'recipients', 'export_id')) as {
      state: string;
      error: string;
      recipients: number;
      export_id: string | null;
    };
    expect(row).toMatchObject({ state: 'skipped', recipients: 0, export_id: null });
    expect(row.error).toMatch(/owner is no longer in the organisation/);
    expect(portal.mail.slice(mailBefore).join('\n')).not.toContain(member.email);
    expect(await runsOf(member)).toEqual([]);
  });
});
