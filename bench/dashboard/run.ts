// Dashboard benchmark (not a test): usage charts and the request log over a million audit rows
// on real PostgreSQL. Fills a fresh database through the audit writer's own insert (so the
// hourly rollup is built as in production), then times, as the portal runs them: usage from the
// rollup against the same report computed straight from the audit log, the request log's first
// and a deep page, and a streamed CSV export (rows/s and the process's memory growth). Rewrites
// its own section of bench/RESULTS.md.
//
//   npm run bench:dashboard     (DATABASE_URL of a server to create a scratch database on;
//                                BENCH_ROWS=1000000 to change the size)
import { resolve } from 'node:path';
import { cpus, totalmem } from 'node:os';
import { insertAuditBatch, insertAuditRows } from '../../core/audit/insert.js';
import type { AuditRecord } from '../../core/audit/record.js';
import { AUDIT_TABLE } from '../../core/audit/rows.js';
import { openDatabase } from '../../core/db/index.js';
import { eachRequest, listRequests, usageReport, type KeyScope } from '../../core/usage/index.js';
import { createBenchDatabase, dropBenchDatabase } from '../shared/databases.js';
import { writeSection } from '../streaming/results.js';

const serverUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const rows = Number(process.env.BENCH_ROWS ?? 1_000_000);
const days = 30;
const dayMs = 86_400_000;
const models = Array.from({ length: 10 }, (_, i) => `model-${i}`);
const suppliers = ['sim-eu', 'sim-us', 'sim-ap'];

/** A deterministic pseudo-random stream, so every run fills the same data. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1_664_525 + 1_013_904_223) >>> 0;
    return s / 2 ** 32;
  };
}

function records(count: number, offset: number, keys: string[], end: number, next: () => number): AuditRecord[] {
  return Array.from({ length: count }, (_, j) => {
    const i = offset + j;
    const ts = end - Math.floor(next() * days * dayMs);
    const ok = next() > 0.05;
    const key = Math.floor(next() * keys.length);
    // Each key mostly calls one model through one supplier, as services do.
    const usual = next() < 0.9;
    const model = models[usual ? key % models.length : Math.floor(next() * models.length)]!;
    const supplier = suppliers[usual ? key % suppliers.length : Math.floor(next() * suppliers.length)]!;
    const input = 50 + Math.floor(next() * 2000);
    const output = ok ? Math.floor(next() * 800) : 0;
    return {
      requestId: `req_bench_${i}`,
      timestamp: new Date(ts).toISOString(),
      keyId: keys[key]!,
      payerId: null,
      interface: 'chat.completions',
      model,
      supplier,
      region: 'EU',
      inputTokens: input,
      outputTokens: output,
      cachedInputTokens: 0,
      cacheWriteInputTokens: 0,
      costUsd: ok ? Math.round(input * 150 + output * 600) / 1e9 : 0,
      latencyMs: 100 + Math.floor(next() * 900),
      status: ok ? 200 : 502,
      code: ok ? null : 'upstream_error',
      failover: false,
      attempts: [
        { supplier: 'sim-eu', region: 'EU', startedAt: ts, latencyMs: 100, outcome: ok ? 'ok' : 'failed', status: ok ? 200 : 502 },
      ],
      session: null,
    };
  });
}

/** Median and p95 wall time of `runs` calls, in ms. */
async function timed(runs: number, fn: () => Promise<unknown>): Promise<{ p50: number; p95: number }> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    await fn();
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  return { p50: times[Math.floor(times.length / 2)]!, p95: times[Math.min(times.length - 1, Math.ceil(times.length * 0.95) - 1)]! };
}

async function main(): Promise<void> {
  const benchUrl = await createBenchDatabase(serverUrl);
  const db = await openDatabase({ kind: 'postgres', url: benchUrl, poolMax: 4 });
  const out: string[] = [];
  try {
    await db.migrate();
    const knex = db.knex;
    const [org] = (await knex('organisations').insert({ name: 'Bench', slug: 'bench' }).returning('id')) as { id: number }[];
    const users = (await knex('users')
      .insert([1, 2, 3].map((n) => ({ email: `u${n}@bench.example`, display_name: `User ${n}`, organisation_id: org!.id })))
      .returning('id')) as { id: number }[];
    const keys: string[] = [];
    for (let k = 0; k < 100; k++) {
      const id = `key_bench_${k}`;
      await knex('api_keys').insert({
        id,
        kind: 'managed',
        name: `bench ${k}`,
        secret_hash: String(k).padStart(64, '0'),
        secret_hint: 'svc-…0000',
        source: 'portal',
        owner_user_id: users[k % 3]!.id,
        organisation_id: org!.id,
      });
      keys.push(id);
    }
    const end = Date.UTC(2026, 10, 20);
    const next = random(42);

    // Fill through the writer's insert (audit rows + rollup in one transaction per batch).
    const batch = 1000;
    const fillStart = performance.now();
    for (let i = 0; i < rows; i += batch) await insertAuditBatch(knex, records(Math.min(batch, rows - i), i, keys, end, next));
    const fillSeconds = (performance.now() - fillStart) / 1000;
    // The same batches without the rollup, into a scratch copy of the table, for the writer's cost.
    // Its primary key too: the writer's insert skips rows already there by (request_id, ts).
    await knex.raw(`create table audit_plain (like ${AUDIT_TABLE} including defaults, primary key (request_id, ts))`);
    const plainCount = Math.min(rows, 100_000);
    const plainStart = performance.now();
    for (let i = 0; i < plainCount; i += batch)
      await knex.transaction(async (trx) => {
        await insertAuditRows(trx, records(batch, rows + i, keys, end, next), 'audit_plain');
      });
    const plainRate = plainCount / ((performance.now() - plainStart) / 1000);
    const withStart = performance.now();
    for (let i = 0; i < plainCount; i += batch) await insertAuditBatch(knex, records(batch, 2 * rows + i, keys, end, next));
    const withRate = plainCount / ((performance.now() - withStart) / 1000);
    await knex.raw('analyze');
    const total = rows + plainCount;
    const rollupRows = Number(((await knex('usage_hourly').count({ n: '*' }).first()) as { n: string }).n);

    const member: KeyScope = { ownerUserId: users[0]!.id };
    const everyone: KeyScope = {};
    const from90 = new Date(end - days * dayMs + dayMs);
    const to = new Date(end + dayMs);
    const timings: [string, { p50: number; p95: number }][] = [];
    timings.push([
      'usage, 30 days by day, split by model, every key (rollup)',
      await timed(20, () => usageReport(knex, { scope: everyone, from: from90, to, granularity: 'day', split: 'model' })),
    ]);
    timings.push([
      'the same report straight from the audit log (no rollup)',
      await timed(5, () =>
        knex(AUDIT_TABLE)
          .where('ts', '>=', from90.toISOString())
          .andWhere('ts', '<', to.toISOString())
          .select(knex.raw(`date_trunc('day', ts, 'UTC') as bin`), 'model')
          .count({ requests: '*' })
          .sum({ cost: 'cost_usd', input: 'input_tokens', output: 'output_tokens' })
          .groupByRaw('1, 2'),
      ),
    ]);
    timings.push([
      "usage, 30 days by day, one member's keys (rollup)",
      await timed(20, () => usageReport(knex, { scope: member, from: new Date(end - 29 * dayMs), to, granularity: 'day' })),
    ]);
    timings.push([
      'usage, 48 hours by hour, split by key, the organisation (rollup)',
      await timed(20, () =>
        usageReport(knex, { scope: { organisationId: org!.id }, from: new Date(end - dayMs), to, granularity: 'hour', split: 'key' }),
      ),
    ]);
    timings.push(['request log, first page of 50, every key', await timed(20, () => listRequests(knex, everyone, {}, { limit: 50 }))]);
    timings.push([
      "request log, first page of 50, one member's failed requests",
      await timed(20, () => listRequests(knex, member, { status: 5 }, { limit: 50 })),
    ]);
    const deep = await listRequests(knex, everyone, { from: new Date(end - 15 * dayMs) }, { limit: 50 });
    timings.push([
      'request log, a page 15 days back (cursor), every key',
      await timed(20, () => listRequests(knex, everyone, {}, { limit: 50, cursor: deep.next! })),
    ]);

    // A streamed export of one member's 30 days (about a third of the rows).
    global.gc?.();
    const rssBefore = process.memoryUsage().rss;
    let peak = rssBefore;
    let exported = 0;
    let bytes = 0;
    const exportStart = performance.now();
    for await (const entry of eachRequest(knex, member, {})) {
      exported++;
      bytes += JSON.stringify(entry).length;
      if (exported % 20_000 === 0) peak = Math.max(peak, process.memoryUsage().rss);
    }
    const exportSeconds = (performance.now() - exportStart) / 1000;

    out.push(
      `## Dashboard: usage and request log over ${(total / 1e6).toFixed(1)}M audit rows (\`npm run bench:dashboard\`)`,
      '',
      `- Date: ${new Date().toISOString().slice(0, 10)}`,
      `- Machine: ${cpus().length} × ${cpus()[0]?.model.trim() ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}; PostgreSQL on the same machine`,
      `- Data: ${total.toLocaleString('en-US')} requests over ${days} days, 100 keys of 3 users in one organisation, 10 models, 3 suppliers, 5 % failures; ${rollupRows.toLocaleString('en-US')} rollup rows`,
      '',
      '| writer (1,000-record batches) | rows/s |',
      '|---|---:|',
      `| audit rows + hourly rollup in one transaction (the writer) | ${Math.round(withRate).toLocaleString('en-US')} |`,
      `| the same rows, plain insert, no rollup | ${Math.round(plainRate).toLocaleString('en-US')} |`,
      `| initial fill of ${rows.toLocaleString('en-US')} rows | ${Math.round(rows / fillSeconds).toLocaleString('en-US')} |`,
      '',
      '| query (as the portal runs it; 20 runs, 5 for the raw scan) | p50 ms | p95 ms |',
      '|---|---:|---:|',
      ...timings.map(([what, t]) => `| ${what} | ${t.p50.toFixed(1)} | ${t.p95.toFixed(1)} |`),
      '',
      `Export: ${exported.toLocaleString('en-US')} rows of one member streamed in pages of 1,000 in ${exportSeconds.toFixed(1)} s ` +
        `(${Math.round(exported / exportSeconds).toLocaleString('en-US')} rows/s, ${(bytes / 2 ** 20).toFixed(0)} MiB of rows); ` +
        `process memory grew by at most ${((peak - rssBefore) / 2 ** 20).toFixed(0)} MiB.`,
      '',
      'The usage JSON and a request-log page must stay under 300 ms at p95 on this data, and the export',
      'must stream with flat memory. The rollup is why usage does not scan the audit log (compare the',
      'raw scan above); its price is paid by the audit writer, in the same transaction as the rows.',
    );
    const body = out.join('\n');
    console.log(body);
    writeSection(resolve(import.meta.dirname, '../RESULTS.md'), 'dashboard', body, '## Dashboard: usage and request log');
  } finally {
    await db.close();
    await dropBenchDatabase(serverUrl, benchUrl);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
