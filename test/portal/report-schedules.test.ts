// Scheduled reports: created with validated cadence, time zone and colleagues as recipients; the
// next run follows the wall clock of the time zone across daylight saving; two replicas ticking
// at once claim a due run once; the run's job exports the report and mails each recipient a link
// (through the job queue, and through a real SMTP receiver on loopback); recipients may download
// that export, others not; runs are reviewed by their people only.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { claimDueRuns, nextRunAfter } from '../../core/reports/index.js';
import { createMailer } from '../../portal/src/mail/mailer.js';
import { runScheduledReport, scheduleRunQueue } from '../../portal/src/jobs.js';
import { startPortalHarness, type PortalHarness } from '../support/portal-harness.js';
import { signUp, type SignedInUser } from '../support/portal-users.js';
import { startSmtpReceiver, type SmtpReceiver } from '../support/smtp-receiver.js';
import { waitFor } from '../support/wait-for.js';

let portal: PortalHarness;
let smtp: SmtpReceiver;
let owner: SignedInUser;
let colleague: SignedInUser;
let outsider: SignedInUser;
let reportId: number;
const knex = () => portal.database.knex;

beforeAll(async () => {
  portal = await startPortalHarness();
  smtp = await startSmtpReceiver();
  const [org] = (await knex()('organisations')
    .insert({ name: 'Schedules Org', slug: `schedules-${Date.now()}` })
    .returning('id')) as { id: number }[];
  owner = await signUp(portal, { organisationId: org!.id });
  colleague = await signUp(portal, { organisationId: org!.id });
  outsider = await signUp(portal);
  const res = await owner.client.postJson('/dashboard/reports', { name: 'Weekly usage', kind: 'usage', days: 7 });
  reportId = ((await res.json()) as { report: { id: number } }).report.id;
});
afterAll(async () => {
  await portal?.close();
  await smtp?.close();
});

describe('next run', () => {
  it('follows the wall clock of the time zone, daylight saving included', () => {
    const paris = { cadence: 'daily' as const, timeOfDay: '08:30', timeZone: 'Europe/Paris' };
    // Winter: UTC+1; the day after the spring change (2026-03-29): UTC+2.
    expect(nextRunAfter(paris, new Date('2026-03-27T10:00:00Z')).toISOString()).toBe('2026-03-28T07:30:00.000Z');
    expect(nextRunAfter(paris, new Date('2026-03-28T10:00:00Z')).toISOString()).toBe('2026-03-29T06:30:00.000Z');
    const weekly = { cadence: 'weekly' as const, timeOfDay: '09:00', timeZone: 'America/New_York', weekday: 1 };
    expect(nextRunAfter(weekly, new Date('2026-11-26T12:00:00Z')).toISOString()).toBe('2026-11-30T14:00:00.000Z');
    const monthly = { cadence: 'monthly' as const, timeOfDay: '00:00', timeZone: 'UTC', monthDay: 1 };
    expect(nextRunAfter(monthly, new Date('2026-12-01T00:00:00Z')).toISOString()).toBe('2027-01-01T00:00:00.000Z');
  });
});

describe('scheduled reports', () => {
  it('refuses bad schedules and recipients outside the organisation, naming the field', async () => {
    const base = { report_id: reportId, cadence: 'daily', time: '08:00', time_zone: 'Europe/Paris', recipients: colleague.email };
    for (const [bad, field] of [
      [{ cadence: 'hourly' }, 'cadence'],
      [{ time: '25:00' }, 'time'],
      [{ time_zone: 'Mars/Olympus' }, 'time_zone'],
      [{ cadence: 'weekly' }, 'weekday'],
      [{ cadence: 'monthly', month_day: 31 }, 'month_day'],
      [{ recipients: outsider.email }, 'recipients'],
      [{ recipients: '' }, 'recipients'],
      // A field the cadence does not use is refused, never stored to look as if it counted.
      [{ weekday: 3 }, 'a daily schedule does not use weekday'],
      [{ month_day: 5 }, 'a daily schedule does not use month_day'],
      [{ cadence: 'weekly', weekday: 1, month_day: 5 }, 'a weekly schedule does not use month_day'],
      [{ cadence: 'monthly', month_day: 5, weekday: '2' }, 'a monthly schedule does not use weekday'],
      // And a field schedules do not have.
      [{ extra: 'x' }, 'has a field it does not take: extra'],
    ] as const) {
      const res = await owner.client.postJson('/dashboard/reports/schedules', { ...base, ...bad });
      expect(res.status, JSON.stringify(bad)).toBe(422);
      expect(await res.text()).toContain(field);
    }
    expect((await outsider.client.postJson('/dashboard/reports/schedules', base)).status).toBe(404);
  });

  it("the hub's forms sent twice at once (a double click) make one schedule and one report", async () => {
    const hub = await (await owner.client.get('/dashboard/reports')).text();
    const tokenOf = (testid: string) => new RegExp(`data-testid="${testid}"[\\s\\S]*?name="form_token" value="([^"]+)"`).exec(hub)?.[1];
    const scheduleForm = {
      report_id: String(reportId),
      cadence: 'daily',
      time: '05:55',
      time_zone: 'UTC',
      weekday: '',
      month_day: '',
      recipients: owner.email,
      form_token: tokenOf('schedule-create')!,
    };
    const reportForm = { name: 'Clicked twice', kind: 'usage', days: '7', group_by: 'none', form_token: tokenOf('report-create')! };
    expect(scheduleForm.form_token).toMatch(/^[0-9a-f-]{36}$/);
    expect(reportForm.form_token).toMatch(/^[0-9a-f-]{36}$/);
    const answers = await Promise.all([
      owner.client.postForm('/dashboard/reports/schedules', scheduleForm),
      owner.client.postForm('/dashboard/reports/schedules', scheduleForm),
      owner.client.postForm('/dashboard/reports', reportForm),
      owner.client.postForm('/dashboard/reports', reportForm),
    ]);
    expect(answers.map((a) => a.status)).toEqual([303, 303, 303, 303]);
    const schedules = (await knex()('report_schedules').where({ owner_user_id: owner.id, time_of_day: '05:55' })) as { id: number }[];
    expect(schedules).toHaveLength(1);
    const reports = (await knex()('saved_reports').where({ owner_user_id: owner.id, name: 'Clicked twice' })) as { id: number }[];
    expect(reports).toHaveLength(1);
    // Both answers lead to the one report made.
    for (const answer of answers.slice(2)) expect(answer.headers.get('location')).toBe(`/dashboard/reports/${reports[0]!.id}/view`);
    await owner.client.postJson(`/dashboard/reports/schedules/${schedules[0]!.id}/disable`, {});

    // The report page's "Export in the background", clicked twice at once: one export job, both answers lead to it.
    const view = await (await owner.client.get(`/dashboard/reports/${reports[0]!.id}/view`)).text();
    const exportToken = /action="\/dashboard\/reports\/\d+\/exports"[\s\S]*?name="form_token" value="([^"]+)"/.exec(view)?.[1];
    expect(exportToken).toMatch(/^[0-9a-f-]{36}$/);
    const started = await Promise.all(
      [1, 2].map(() => owner.client.postForm(`/dashboard/reports/${reports[0]!.id}/exports`, { form_token: exportToken! })),
    );
    expect(started.map((a) => a.status)).toEqual([303, 303]);
    const jobs = (await knex()('report_exports').where({ report_id: reports[0]!.id })) as { id: string }[];
    expect(jobs).toHaveLength(1);
    for (const answer of started) expect(answer.headers.get('location')).toBe(`/dashboard/reports/exports/${jobs[0]!.id}`);
  });

  it('accepts an empty value for a field the cadence does not use (the form sends every field)', async () => {
    const res = await owner.client.postJson('/dashboard/reports/schedules', {
      report_id: reportId,
      cadence: 'daily',
      time: '08:00',
      time_zone: 'Europe/Paris',
      weekday: '',
      month_day: '',
      recipients: colleague.email,
    });
    expect(res.status).toBe(201);
    const { schedule } = (await res.json()) as { schedule: { schedule_id: number; weekday: number | null } };
    expect(schedule.weekday).toBeNull();
    await owner.client.postJson(`/dashboard/reports/schedules/${schedule.schedule_id}/disable`, {});
  });

  it('a due schedule runs once however many replicas tick; its recipients get a link and may download it', async () => {
    const created = await owner.client.postJson('/dashboard/reports/schedules', {
      report_id: reportId,
      cadence: 'daily',
      time: '06:15',
      time_zone: 'Asia/Tokyo',
      recipients: [owner.email, colleague.email.toUpperCase()],
    });
    expect(created.status, await created.clone().text()).toBe(201);
    const { schedule } = (await created.json()) as { schedule: { schedule_id: number; next_run_at: string; recipient_user_ids: number[] } };
    expect(schedule.recipient_user_ids.sort()).toEqual([owner.id, colleague.id].sort());
    // Due now.
    const due = new Date(Date.now() - 1_000);
    await knex()('report_schedules').where({ id: schedule.schedule_id }).update({ next_run_at: due });
    const claims = await Promise.all([
      claimDueRuns(knex(), new Date()),
      claimDueRuns(knex(), new Date()),
      claimDueRuns(knex(), new Date()),
    ]);
    const runIds = claims.flat();
    expect(runIds).toHaveLength(1);
    expect(await knex()('schedule_runs').where({ schedule_id: schedule.schedule_id }).count({ n: '*' })).toEqual([
      { n: expect.anything() },
    ]);
    const next = (await knex()('report_schedules').where({ id: schedule.schedule_id }).first('next_run_at')) as { next_run_at: Date };
    expect(new Date(next.next_run_at).getTime()).toBeGreaterThan(Date.now());

    // The run goes through the job queue like any: both recipients are mailed a link.
    await portal.portal.deps.jobs.send(scheduleRunQueue, { runId: runIds[0]! });
    await waitFor(
      'the run to be sent',
      async () => ((await knex()('schedule_runs').where({ id: runIds[0] }).first('state')) as { state: string }).state === 'sent',
      30_000,
    );
    const link = portal.lastLink(colleague.email, '/dashboard/reports/exports/');
    expect(link).toBeTruthy();
    expect(portal.lastLink(owner.email, '/dashboard/reports/exports/')).toBe(link);
    const path = new URL(link!).pathname;
    // The link is the download, which a recipient may open (the job's page is its owner's); someone else cannot even see it.
    expect(path).toMatch(/\/download$/);
    const download = await colleague.client.get(path);
    expect(download.status).toBe(200);
    expect(await download.text()).toContain('day,group,requests');
    expect((await outsider.client.get(path)).status).toBe(404);

    // Reviewed by a recipient; an outsider's review is 404.
    expect((await outsider.client.postJson(`/dashboard/reports/schedule-runs/${runIds[0]}/review`, {})).status).toBe(404);
    const reviewed = await colleague.client.postJson(`/dashboard/reports/schedule-runs/${runIds[0]}/review`, {});
    expect(reviewed.status).toBe(200);
    expect(((await reviewed.json()) as { run: { reviewed_by: number } }).run.reviewed_by).toBe(colleague.id);

    // The runs are listed to the owner and the recipients, with the file and the review; not to others.
    interface Run {
      run_id: number;
      owned: boolean;
      state: string;
      recipients: number;
      download_url: string | null;
      reviewed_by_name: string | null;
    }
    const runsOf = async (user: SignedInUser) =>
      ((await (await user.client.get('/dashboard/reports/schedule-runs', { accept: 'application/json' })).json()) as { data: Run[] }).data;
    const [ownerRun] = await runsOf(owner);
    expect(ownerRun).toMatchObject({ run_id: runIds[0], owned: true, state: 'sent', recipients: 2, download_url: path });
    expect(ownerRun!.reviewed_by_name).toBeTruthy();
    expect((await runsOf(colleague))[0]).toMatchObject({ run_id: runIds[0], owned: false, download_url: path });
    expect(await runsOf(outsider)).toEqual([]);
    const page = await (await colleague.client.get('/dashboard/reports/schedule-runs')).text();
    expect(page).toContain('Weekly usage');
    expect(page).toContain('(sent to you)');
    expect(page).toContain(`href="${path}"`);
    expect(page).not.toContain('Mark reviewed');
    // Once the file expired, the run says so instead of linking to a 404.
    await knex()('report_exports')
      .where({ id: path.split('/').at(-2) })
      .update({ expires_at: new Date(Date.now() - 1_000) });
    expect((await runsOf(owner))[0]!.download_url).toBeNull();
    await knex()('report_exports')
      .where({ id: path.split('/').at(-2) })
      .update({ expires_at: new Date(Date.now() + 86_400_000) });

    // The same run delivered again (at least once) sends nothing twice.
    const before = portal.mail.length;
    const again = await portal.portal.deps.jobs.send(scheduleRunQueue, { runId: runIds[0]! });
    await waitFor(
      'the repeated job to complete',
      async () => (await portal.portal.deps.jobs.state(scheduleRunQueue, again)) === 'completed',
    );
    expect(portal.mail.length).toBe(before);

    // Disabled: never due again.
    const disabled = await owner.client.postJson(`/dashboard/reports/schedules/${schedule.schedule_id}/disable`, {});
    expect(disabled.status).toBe(200);
    expect(await disabled.json()).toMatchObject({ schedule: { enabled: false, next_run_at: null } });
    await knex()('report_schedules').where({ id: schedule.schedule_id }).update({ next_run_at: due });
    expect(await claimDueRuns(knex(), new Date())).toEqual([]);
  });

  it("a run's email reaches a real SMTP receiver", async () => {
    const created = await owner.client.postJson('/dashboard/reports/schedules', {
      report_id: reportId,
      cadence: 'monthly',
      month_day: 3,
      time: '23:59',
      time_zone: 'UTC',
      recipients: colleague.email,
    });
    const { schedule } = (await created.json()) as { schedule: { schedule_id: number } };
    await knex()('report_schedules')
      .where({ id: schedule.schedule_id })
      .update({ next_run_at: new Date(Date.now() - 1_000) });
    const [runId] = await claimDueRuns(knex(), new Date());
    const mailer = createMailer({
      smtpUrl: smtp.url,
      from: 'svc reports <reports@localhost>',
      dataDir: portal.portal.deps.settings.SVC_DATA_DIR,
      announce: () => undefined,
      logger: pino({ level: 'silent' }),
    });
    try {
      await runScheduledReport(
        {
          knex: knex(),
          logger: pino({ level: 'silent' }),
          dataDir: portal.portal.deps.settings.SVC_DATA_DIR,
          clock: Date.now,
          mailer,
          baseUrl: portal.url,
        },
        runId!,
      );
    } finally {
      mailer.close();
    }
    await waitFor('the message at the receiver', () => smtp.linkTo(colleague.email, '/dashboard/reports/exports/') !== undefined);
    expect(smtp.messages.find((m) => m.to.includes(colleague.email.toLowerCase()))!.raw).toContain('Weekly usage');
  });
});
