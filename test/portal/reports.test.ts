// Saved reports and export jobs on the job queue (pg-boss), against the portal's database (real
// PostgreSQL with DATABASE_URL, else embedded): reports are the caller's own; a request-log
// report's CSV equals the audit rows of the caller's keys; a 200,000-row export runs in the
// background with progress and flat memory; cancel stops a running export; an export whose
// worker died is picked up again by the sweep, never left running.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { randomUUID } from 'node:crypto';
import { KeyRepository } from '../../core/keys/index.js';
import { runExport, sweepStalledExports } from '../../core/reports/index.js';
import { ownerScope } from '../../portal/src/jobs.js';
import { formatUsd } from '../../portal/src/web/usd.js';
import type { PortalClient } from '../support/portal-client.js';
import { startPortalHarness, type PortalHarness } from '../support/portal-harness.js';
import { signUp, type SignedInUser } from '../support/portal-users.js';
import { waitFor } from '../support/wait-for.js';

let portal: PortalHarness;
let owner: SignedInUser;
let stranger: SignedInUser;
let keyId: string;
const knex = () => portal.database.knex;

/** `n` audit rows of the key, one a second back from a minute ago, through SQL (fast at any n). */
async function auditRows(key: string, n: number, model = 'gpt-4o-mini') {
  await knex().raw(
    `insert into audit_log (request_id, ts, key_id, payer_id, interface, model, supplier, region, input_tokens, output_tokens,
       cached_input_tokens, cost_usd, latency_ms, status, code, failover, attempts, session, auto_routed)
     select 'req-' || ? || '-' || g, now() - interval '1 minute' - (g || ' seconds')::interval, ?, null, 'chat.completions', ?, 'sim-eu', 'EU',
       10 + (g % 7), 20, 0, 0.000001 * (g % 13), 5 + (g % 50), case when g % 10 = 0 then 500 else 200 end,
       case when g % 10 = 0 then 'upstream_error' else null end, false, '[]'::jsonb, null, false
     from generate_series(1, ?) g`,
    [randomUUID().slice(0, 8), key, model, n],
  );
}

const create = async (client: PortalClient, body: Record<string, unknown>, status = 201) => {
  const res = await client.postJson('/dashboard/reports', body);
  expect(res.status, await res.clone().text()).toBe(status);
  return ((await res.json()) as { report: { id: number; name: string } }).report;
};
const job = async (client: PortalClient, id: string) =>
  (
    (await (await client.get(`/dashboard/reports/exports/${id}`, { accept: 'application/json' })).json()) as {
      job: {
        state: string;
        progress: number;
        rows_written: number;
        total_rows: number | null;
        bytes_written: number;
        download_url: string | null;
      };
    }
  ).job;

beforeAll(async () => {
  portal = await startPortalHarness();
  owner = await signUp(portal);
  stranger = await signUp(portal);
  const keys = new KeyRepository(knex(), portal.portal.deps.settings.SVC_KEY_PEPPER);
  keyId = (await keys.create({ kind: 'managed', name: 'reporting key', source: 'portal', ownerUserId: owner.id })).record.id;
});
afterAll(async () => {
  await portal?.close();
});

describe('saved reports', () => {
  it('one person keeps at most 200: the 201st is refused with a reason, not hidden off the end of the list', async () => {
    const keeper = await signUp(portal);
    await knex()('saved_reports').insert(
      Array.from({ length: 199 }, (_, i) => ({
        owner_user_id: keeper.id,
        name: `r${i}`,
        kind: 'usage',
        definition: JSON.stringify({ days: 30, group_by: 'none' }),
      })),
    );
    await create(keeper.client, { name: 'the 200th', kind: 'usage' });
    const refused = await keeper.client.postJson('/dashboard/reports', { name: 'the 201st', kind: 'usage' });
    expect(refused.status).toBe(409);
    expect(((await refused.json()) as { human_message: string }).human_message).toContain('delete one');
    const listed = (await (await keeper.client.get('/dashboard/reports', { accept: 'application/json' })).json()) as { data: unknown[] };
    expect(listed.data).toHaveLength(200);
  });

  it('a refused form is shown again with what was typed and each problem, not an error page', async () => {
    const page = await owner.client.postForm(
      '/dashboard/reports',
      { name: 'Typed name', kind: 'usage', days: '500', group_by: 'none' },
      { accept: 'text/html' },
    );
    expect(page.status).toBe(422);
    const html = await page.text();
    expect(html).toContain('Please correct the form');
    expect(html).toContain('value="Typed name"');
    expect(html).toContain('value="500"');
    expect(html).toContain('data-testid="report-create"');
    // The schedule form too: a time zone that does not exist, the recipients kept.
    const report = await create(owner.client, { name: 'To schedule', kind: 'usage' });
    const schedule = await owner.client.postForm(
      '/dashboard/reports/schedules',
      {
        report_id: String(report.id),
        cadence: 'daily',
        time: '07:30',
        time_zone: 'Mars/Olympus',
        weekday: '1',
        month_day: '1',
        recipients: owner.email,
      },
      { accept: 'text/html' },
    );
    expect(schedule.status).toBe(422);
    const scheduleHtml = await schedule.text();
    expect(scheduleHtml).toContain('Please correct the form');
    expect(scheduleHtml).toContain('value="Mars/Olympus"');
    expect(scheduleHtml).toContain('value="07:30"');
  });

  it('a query parameter the page does not take, or a malformed one, is 422 naming the query', async () => {
    const report = await create(owner.client, { name: 'Queried', kind: 'usage' });
    for (const path of [
      '/dashboard/reports?foo=1',
      `/dashboard/reports/${report.id}/view?foo=1`,
      '/dashboard/reports/schedule-runs?limit=abc',
      '/dashboard/reports/schedule-runs?page=-1',
    ]) {
      const res = await owner.client.get(path, { accept: 'application/json' });
      expect(res.status, path).toBe(422);
      expect(await res.json(), path).toMatchObject({ code: 'validation_error', human_message: 'Some input is not valid: query' });
    }
    // Without one, as before.
    expect((await owner.client.get('/dashboard/reports/schedule-runs', { accept: 'application/json' })).status).toBe(200);
  });

  it('are created, read, renamed and deleted by their owner only; bad definitions are 422', async () => {
    for (const bad of [
      { name: '', kind: 'usage' },
      { name: 'x', kind: 'pie' },
      { name: 'x', kind: 'usage', days: 0 },
      { name: 'x', kind: 'usage', group_by: 'colour' },
      { name: 'x', kind: 'request_log', status: 42 },
      // A filter the kind would not apply is refused, not saved to look as if it narrowed the rows.
      { name: 'x', kind: 'usage', status: 404 },
      { name: 'x', kind: 'usage', model: 'gpt-4o' },
      { name: 'x', kind: 'request_log', group_by: 'model' },
      // A field reports do not have, and a key that is not the owner's.
      { name: 'x', kind: 'usage', extra: 1 },
      { name: 'x', kind: 'request_log', key_id: 999_999 },
    ])
      await create(owner.client, bad, 422);
    // The owner's own key is a filter it may name.
    const ownKey = (await knex()('api_keys').where({ id: keyId }).first('number')) as { number: number };
    await create(owner.client, { name: 'One key', kind: 'request_log', key_id: ownKey.number });
    await create(stranger.client, { name: 'Not mine', kind: 'request_log', key_id: ownKey.number }, 422);
    // An empty optional field of the form is the default, as when it is left out.
    await create(owner.client, { name: 'From the form', kind: 'usage', days: '', group_by: 'none', model: '', status: '' });
    const report = await create(owner.client, { name: 'Daily spend', kind: 'usage', days: 7, group_by: 'model' });
    const list = (await (await owner.client.get('/dashboard/reports', { accept: 'application/json' })).json()) as {
      data: { id: number }[];
    };
    expect(list.data.map((r) => r.id)).toContain(report.id);
    const open = await owner.client.get(`/dashboard/reports/${report.id}/open`);
    expect(open.status).toBe(303);
    expect(open.headers.get('location')).toBe(`/dashboard/reports/${report.id}/view`);
    expect(await (await owner.client.get(`/dashboard/reports/${report.id}/view`)).text()).toContain('Daily spend');
    // Someone else's report does not exist for them, on every route.
    for (const path of ['view', 'open', 'export'])
      expect((await stranger.client.get(`/dashboard/reports/${report.id}/${path}`, { accept: 'application/json' })).status).toBe(404);
    expect((await stranger.client.get(`/dashboard/api/reports/${report.id}`)).status).toBe(404);
    expect((await stranger.client.postJson(`/dashboard/reports/${report.id}/exports`, {})).status).toBe(404);
    expect((await stranger.client.postJson(`/dashboard/reports/${report.id}/rename`, { name: 'mine' })).status).toBe(404);
    expect((await owner.client.get('/dashboard/reports/abc/view')).status).toBe(422);
    const renamed = await owner.client.postJson(`/dashboard/reports/${report.id}/rename`, { name: 'Spend by model' });
    expect(((await renamed.json()) as { report: { name: string } }).report.name).toBe('Spend by model');
    expect((await owner.client.postJson(`/dashboard/reports/${report.id}/delete`, {})).status).toBe(200);
    expect((await owner.client.get(`/dashboard/api/reports/${report.id}`)).status).toBe(404);
  });

  it("a request-log report's CSV and JSON hold exactly the audit rows of the owner's keys", async () => {
    await auditRows(keyId, 30, 'model-a');
    const otherKey = (
      await new KeyRepository(knex(), portal.portal.deps.settings.SVC_KEY_PEPPER).create({
        kind: 'managed',
        name: 'not theirs',
        source: 'portal',
        ownerUserId: stranger.id,
      })
    ).record.id;
    await auditRows(otherKey, 5, 'model-a');
    const report = await create(owner.client, { name: 'Failures of model-a', kind: 'request_log', model: 'model-a', status: 5 });
    const csv = await (await owner.client.get(`/dashboard/reports/${report.id}/export`)).text();
    const lines = csv.trimEnd().split('\r\n');
    expect(lines[0]).toBe(
      'request_id,gateway_request_id,ts,key_id,key_name,interface,model,supplier,region,status,code,input_tokens,output_tokens,cached_input_tokens,cost_usd,latency_ms,failover,attempts,cache_write_input_tokens',
    );
    const expected = (await knex()('audit_log')
      .where({ key_id: keyId, model: 'model-a' })
      .whereBetween('status', [500, 599])
      .pluck('request_id')) as string[];
    expect(
      lines
        .slice(1)
        .map((l) => l.split(',')[1])
        .sort(),
    ).toEqual(expected.sort());
    const api = (await (await owner.client.get(`/dashboard/api/reports/${report.id}`)).json()) as {
      total: number;
      rows: unknown[][];
      truncated: boolean;
    };
    expect(api).toMatchObject({ total: expected.length, truncated: false });
    expect(api.rows).toHaveLength(expected.length);
    // The page shows costs as every page shows money, not the CSV's raw number.
    const view = await (await owner.client.get(`/dashboard/reports/${report.id}/view`)).text();
    const costAt = lines[0]!.split(',').indexOf('cost_usd');
    const costs = [...view.matchAll(/data-testid="report-cost">([^<]*)</g)].map((m) => m[1]);
    expect(costs).toHaveLength(expected.length);
    expect(costs.sort()).toEqual(api.rows.map((r) => formatUsd(Number(r[costAt]))).sort());
    expect(view).not.toContain('cost usd');
  });
});

describe('export jobs', () => {
  it('export 200,000 rows in the background with progress and flat memory; the file matches the audit rows', async () => {
    await auditRows(keyId, 200_000, 'bulk-model');
    const report = await create(owner.client, { name: 'Everything', kind: 'request_log', model: 'bulk-model', days: 7 });
    const started = await owner.client.postJson(`/dashboard/reports/${report.id}/exports`, {});
    expect(started.status, await started.clone().text()).toBe(202);
    const { job: queued } = (await started.json()) as { job: { job_id: string; progress: number } };
    expect(queued.progress).toBe(0);
    // Live heap, not garbage: collect before each sample (rows that were written are garbage at
    // once; a buffered export would be live). The heap only: the embedded database's WebAssembly
    // memory is outside it and is the database's, not the export's.
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const live = () => {
      gc();
      return process.memoryUsage().heapUsed;
    };
    const heap: number[] = [live()];
    const progress: number[] = [];
    try {
      await waitFor(
        'the export to succeed',
        async () => {
          const state = await job(owner.client, queued.job_id);
          progress.push(state.progress);
          heap.push(live());
          return state.state === 'succeeded';
        },
        240_000,
        250,
      );
    } finally {
      heap.push(live());
    }
    const done = await job(owner.client, queued.job_id);
    expect(done).toMatchObject({ rows_written: 200_000, total_rows: 200_000, progress: 1 });
    // Progress was seen moving between 0 and 1 while it ran.
    expect(progress.some((p) => p > 0 && p < 1)).toBe(true);
    const download = await owner.client.get(done.download_url!);
    expect(download.headers.get('content-type')).toContain('text/csv');
    const text = await download.text();
    expect(Buffer.byteLength(text)).toBe(done.bytes_written);
    expect(text.length).toBeGreaterThan(20_000_000);
    // Flat memory: while it ran, the live heap never grew by anything near the CSV's size (22+ MB).
    expect(Math.max(...heap) - heap[0]!).toBeLessThan(10_000_000);
    const lines = text.trimEnd().split('\r\n');
    expect(lines).toHaveLength(200_001);
    const ids = new Set(lines.slice(1).map((l) => l.split(',')[1]));
    expect(ids.size).toBe(200_000);
    // Only the owner downloads.
    expect((await stranger.client.get(done.download_url!)).status).toBe(404);
  }, 300_000);

  it('cancel stops a running export, and an export whose worker died is taken up again by the sweep', async () => {
    const report = await create(owner.client, { name: 'Cancel me', kind: 'request_log', model: 'bulk-model', days: 7 });
    const { job: started } = (await (await owner.client.postJson(`/dashboard/reports/${report.id}/exports`, {})).json()) as {
      job: { job_id: string };
    };
    await waitFor('the export to run', async () => (await job(owner.client, started.job_id)).rows_written > 0, 60_000, 50);
    const cancelled = await owner.client.postJson(`/dashboard/reports/exports/${started.job_id}/cancel`, {});
    expect(cancelled.status).toBe(200);
    await waitFor('the export to stop', async () => (await job(owner.client, started.job_id)).state === 'cancelled', 30_000, 100);
    expect((await job(owner.client, started.job_id)).rows_written).toBeLessThan(200_000);
    expect((await owner.client.postJson(`/dashboard/reports/exports/${started.job_id}/cancel`, {})).status).toBe(409);
    expect((await owner.client.get(`/dashboard/reports/exports/${started.job_id}/download`)).status).toBe(409);

    // A worker that died mid-export left the job running with an old heartbeat.
    const small = await create(owner.client, { name: 'Small', kind: 'request_log', model: 'model-a' });
    const lost = randomUUID();
    await knex()('report_exports').insert({
      id: lost,
      report_id: small.id,
      owner_user_id: owner.id,
      format: 'csv',
      state: 'running',
      attempts: 1,
      rows_written: 12,
      heartbeat_at: new Date(Date.now() - 5 * 60_000),
    });
    const requeued = await sweepStalledExports(knex(), new Date());
    expect(requeued).toContain(lost);
    expect((await job(owner.client, lost)).state).toBe('queued');
    // Run again (as the re-queued job would be): it finishes from the first row.
    await runExport({ knex: knex(), scopeOf: (id) => ownerScope(knex(), id), clock: Date.now }, lost);
    expect(await job(owner.client, lost)).toMatchObject({ state: 'succeeded', rows_written: 30 });
    // Out of attempts: failed with the reason, never running forever.
    const doomed = randomUUID();
    await knex()('report_exports').insert({
      id: doomed,
      report_id: small.id,
      owner_user_id: owner.id,
      format: 'csv',
      state: 'running',
      attempts: 3,
      heartbeat_at: new Date(Date.now() - 5 * 60_000),
    });
    expect(await sweepStalledExports(knex(), new Date())).not.toContain(doomed);
    expect((await job(owner.client, doomed)).state).toBe('failed');
  }, 120_000);
});
