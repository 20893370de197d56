// Reports in a real browser (Chromium through playwright-core): create a report from the hub,
// read it with its chart, start a background export, watch the progress bar fill and the state
// change on the export page, and download the CSV; a scheduled run on the runs page.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { KeyRepository } from '../../core/keys/index.js';
import { claimDueRuns } from '../../core/reports/index.js';
import { scheduleRunQueue } from '../../portal/src/jobs.js';
import { launchChromium, screenshot, signInPage } from '../support/browser.js';
import { startPortalHarness, type PortalHarness } from '../support/portal-harness.js';
import { signUp } from '../support/portal-users.js';
import { waitFor } from '../support/wait-for.js';

let portal: PortalHarness;
let browser: Browser;
beforeAll(async () => {
  portal = await startPortalHarness();
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await portal?.close();
});

describe('reports in the browser', () => {
  it('create a report, export it in the background, watch the progress and download the file', async () => {
    const user = await signUp(portal, { name: 'Rita Reports', password: 'browser password 45' });
    const knex = portal.database.knex;
    const key = (
      await new KeyRepository(knex, portal.portal.deps.settings.SVC_KEY_PEPPER).create({
        kind: 'managed',
        name: 'reporting',
        source: 'portal',
        ownerUserId: user.id,
      })
    ).record.id;
    await knex.raw(
      `insert into audit_log (request_id, ts, key_id, payer_id, interface, model, supplier, region, input_tokens, output_tokens,
         cached_input_tokens, cost_usd, latency_ms, status, code, failover, attempts, session, auto_routed)
       select 'browser-' || g, now() - (g || ' seconds')::interval, ?, null, 'chat.completions', case when g % 2 = 0 then 'model-a' else 'model-b' end,
         'sim-eu', 'EU', 10, 20, 0, 0.0001, 12, 200, null, false, '[]'::jsonb, null, false
       from generate_series(1, 30000) g`,
      [key],
    );
    // The hourly rollup the usage report reads, as the audit writer keeps it.
    await knex.raw(
      `insert into usage_hourly (key_id, hour, model, supplier, requests, errors, input_tokens, output_tokens, cached_input_tokens, cost_usd, latency_ms_sum)
       select key_id, date_trunc('hour', ts), model, supplier, count(*), 0, sum(input_tokens), sum(output_tokens), 0, sum(cost_usd), sum(latency_ms)
       from audit_log where key_id = ? group by 1, 2, 3, 4`,
      [key],
    );
    const signedIn = await signInPage(browser, portal.url, user, '/dashboard/reports');
    try {
      const page = signedIn.page;
      await page.fill('[data-testid=report-create] #name', 'Spend by model');
      await page.selectOption('[data-testid=report-create] #kind', 'usage');
      await page.selectOption('[data-testid=report-create] #group_by', 'model');
      await page.click('[data-testid=report-create] button');
      await page.waitForURL(/\/dashboard\/reports\/\d+\/view$/);
      // The chart is drawn from the report's rows.
      await page.waitForSelector('html[data-charts=drawn]');
      expect(await page.textContent('[data-testid=report-rows]')).toContain('model-a');
      await screenshot(page, 'report-view');

      // Back to the hub: a request-log report of all 30,000 rows, exported in the background.
      await page.goto('/dashboard/reports');
      await page.fill('[data-testid=report-create] #name', 'All requests');
      await page.selectOption('[data-testid=report-create] #kind', 'request_log');
      await page.click('[data-testid=report-create] button');
      await page.waitForURL(/\/view$/);
      await page.click('[data-testid=export-start]');
      await page.waitForURL(/\/dashboard\/reports\/exports\/[0-9a-f-]{36}$/);
      await page.waitForSelector('#export-status[data-state=succeeded]', { timeout: 120_000 });
      expect(await page.evaluate('document.querySelector("[data-testid=export-progress]").value')).toBe(1);
      expect(await page.textContent('[data-testid=export-counts]')).toContain('30,000 of 30,000 rows');
      await screenshot(page, 'report-export-done');
      const [download] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid=export-download]')]);
      const path = await download.path();
      const { readFileSync } = await import('node:fs');
      const lines = readFileSync(path!, 'utf8').trimEnd().split('\r\n');
      expect(lines).toHaveLength(30_001);
      // The report's own name (RFC 6266 filename*), not the ASCII fallback old clients get.
      expect(download.suggestedFilename()).toMatch(/^All requests-[0-9a-f]{8}\.csv$/);
      expect(signedIn.problems).toEqual([]);
    } finally {
      await signedIn.close();
    }
  }, 180_000);

  it('the schedule form sends the day its cadence uses: weekly starts on Monday, daily sends none', async () => {
    const user = await signUp(portal, { name: 'Wes Weekly', password: 'browser password 47' });
    await user.client.postJson('/dashboard/reports', { name: 'Weekly spend', kind: 'usage' });
    const signedIn = await signInPage(browser, portal.url, user, '/dashboard/reports');
    try {
      const page = signedIn.page;
      const form = page.locator('[data-testid=schedule-create]');
      // Daily: neither day field is sent (the server refuses a day field the cadence does not use).
      expect(await form.locator('#weekday').isDisabled()).toBe(true);
      expect(await form.locator('#month_day').isDisabled()).toBe(true);
      await form.locator('#cadence').selectOption('weekly');
      expect(await form.locator('#weekday').inputValue()).toBe('1');
      expect(await form.locator('#month_day').isDisabled()).toBe(true);
      await form.getByRole('button', { name: 'Schedule' }).click();
      await page.waitForURL(/\/dashboard\/reports$/);
      const rows = (await portal.database
        .knex('report_schedules')
        .where({ owner_user_id: user.id })
        .select('cadence', 'weekday', 'month_day')) as unknown[];
      expect(rows).toEqual([{ cadence: 'weekly', weekday: 1, month_day: null }]);
      expect(signedIn.problems).toEqual([]);
    } finally {
      await signedIn.close();
    }
  });

  it('a scheduled run is listed with its file, and reviewed from the runs page', async () => {
    const user = await signUp(portal, { name: 'Sam Schedules', password: 'browser password 46' });
    const report = (await (await user.client.postJson('/dashboard/reports', { name: 'Daily spend', kind: 'usage' })).json()) as {
      report: { id: number };
    };
    const created = await user.client.postJson('/dashboard/reports/schedules', {
      report_id: report.report.id,
      cadence: 'daily',
      time: '07:00',
      time_zone: 'UTC',
      recipients: [user.email],
    });
    const { schedule } = (await created.json()) as { schedule: { schedule_id: number } };
    const knex = portal.database.knex;
    await knex('report_schedules')
      .where({ id: schedule.schedule_id })
      .update({ next_run_at: new Date(Date.now() - 1_000) });
    const [runId] = await claimDueRuns(knex, new Date());
    await portal.portal.deps.jobs.send(scheduleRunQueue, { runId: runId! });
    await waitFor(
      'the run to be sent',
      async () => ((await knex('schedule_runs').where({ id: runId }).first('state')) as { state: string }).state === 'sent',
      30_000,
    );
    const signedIn = await signInPage(browser, portal.url, user, '/dashboard/reports');
    try {
      const page = signedIn.page;
      await page.click('[data-testid=runs-link]');
      await page.waitForURL(/\/dashboard\/reports\/schedule-runs$/);
      const row = page.locator(`tr[data-run="${runId}"]`);
      expect(await row.locator('[data-testid=run-state]').textContent()).toBe('sent');
      await screenshot(page, 'report-runs');
      const [download] = await Promise.all([page.waitForEvent('download'), row.locator('[data-testid=run-download]').click()]);
      expect(download.suggestedFilename()).toMatch(/^Daily spend-[0-9a-f]{8}\.csv$/);
      await row.getByRole('button', { name: 'Mark reviewed' }).click();
      await page.waitForURL(/\/dashboard\/reports\/schedule-runs$/);
      expect(await page.locator(`tr[data-run="${runId}"] [data-testid=run-reviewed]`).textContent()).toContain('by Sam Schedules');
      expect(signedIn.problems).toEqual([]);
    } finally {
      await signedIn.close();
    }
  }, 120_000);
});
