// The gateway as a process (npm run gateway), configured by environment only, as Kubernetes runs
// it: start-up refusals name what is wrong, and SIGTERM drains the request in flight.
import { afterAll, beforeAll, beforeEach, describe, onTestFinished, test } from 'vitest';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { Redis } from 'ioredis';
import { join, resolve } from 'node:path';
import { once } from 'node:events';
import { openDatabase } from '../../core/db/index.js';
import { createTestDatabase, seedEmbeddedDataDir } from '../../core/db/testing.js';
import { generateSecret, KeyRepository } from '../../core/keys/index.js';
import { deleteKeysWithPrefix } from '../../core/store/testing.js';
import { freePort } from '../support/free-port.js';
import { waitFor } from '../support/wait-for.js';

const root = resolve(import.meta.dirname, '../..');

/** Runs `npm run gateway`'s entry point with only environment configuration, as Kubernetes does; killed when the test ends. */
function spawnGateway(
  env: Record<string, string>,
  entry = 'gateway/src/main.ts',
): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
  const child = spawn(process.execPath, ['--import', 'tsx', entry], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  onTestFinished(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  return { child, output: () => output, exited };
}

/** Pids of a process's children (the cluster's workers), from /proc. */
function childPids(parent: number): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        // Fields after the parenthesised command: state, then the parent pid.
        const [, state, ppid] = stat.slice(stat.lastIndexOf(')') + 1).split(' ');
        // Only gateway processes (tsx, when running from source, has an esbuild child too).
        return Number(ppid) === parent && state !== 'Z' && readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('gateway/src/main');
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** Waits for the start-up line "gateway listening on <url>;" and returns the url. */
async function listeningUrl(output: () => string): Promise<string> {
  let base = '';
  await waitFor(
    'the gateway to listen',
    () => (base = /gateway listening on (http:\/\/\S+?);/.exec(output())?.[1] ?? '') !== '',
    60_000,
  ).catch((error: Error) => {
    throw new Error(`${error.message}; its output:\n${output()}`);
  });
  return base;
}

/** `work`, or a rejection naming what hung once `ms` pass (a hang then fails with the process output, not the test timeout). */
function withDeadline<T>(work: Promise<T>, ms: number, explain: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(explain())), ms);
  });
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}

/** One chat completion through the gateway with `secret`. */
function chat(base: string, secret: string, content: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }] }),
  });
}

/** A supplier that holds every chat completion until the test releases it. */
async function startHeldSupplier(): Promise<{ url: string; received: () => number; release(): void; close(): Promise<void> }> {
  const held: ServerResponse[] = [];
  let released = false;
  const answer = (res: ServerResponse) =>
    res.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        id: 'chatcmpl-held',
        object: 'chat.completion',
        created: 0,
        model: 'gpt-4o-mini',
        choices: [{ index: 0, message: { role: 'assistant', content: 'held answer' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
      }),
    );
  let received = 0;
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received += 1;
      if (released) answer(res);
      else held.push(res);
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    received: () => received,
    release: () => {
      released = true;
      for (const res of held.splice(0)) answer(res);
    },
    close: () =>
      new Promise<void>((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
}

describe('the gateway process (npm run gateway)', () => {
  let supplier: Awaited<ReturnType<typeof startHeldSupplier>>;
  let dir: string;
  let catalogue: string;
  // One prefix per test: each test has a database of its own, and a prefix belongs to one database.
  let prefix = '';
  let tests = 0;
  beforeEach(() => {
    tests += 1;
    prefix = `proc-test-${process.pid}-${tests}:`;
  });
  const baseEnv = () => ({
    SVC_ADMIN_KEY: generateSecret('admin'),
    SVC_KEY_PEPPER: generateSecret('admin'),
    SVC_CATALOG: catalogue,
    SVC_DATA_DIR: join(dir, 'data'),
    SVC_HOST: '127.0.0.1',
    SVC_METRICS_PORT: '0',
    PORT: '0',
    LOG_LEVEL: 'warn',
    ...(process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL, SVC_STORE_PREFIX: prefix } : {}),
  });

  beforeAll(async () => {
    supplier = await startHeldSupplier();
    dir = mkdtempSync(join(tmpdir(), 'svc-proc-'));
    catalogue = join(dir, 'catalog.yaml');
    writeFileSync(
      catalogue,
      `suppliers:\n  - name: held-eu\n    protocol: openai\n    base_url: ${supplier.url}\n    region: EU\n    models:\n      - id: gpt-4o-mini\n        input_usd_per_mtok: 0.15\n        output_usd_per_mtok: 0.6\n`,
    );
  });
  afterAll(async () => {
    await supplier?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
    if (process.env.REDIS_URL) await deleteKeysWithPrefix(process.env.REDIS_URL, `proc-test-${process.pid}-`);
  });

  test('a bad catalogue stops start-up with a message naming the field', async () => {
    const bad = join(dir, 'bad.yaml');
    writeFileSync(
      bad,
      'suppliers:\n  - name: x\n    protocol: carrier-pigeon\n    base_url: http://127.0.0.1:1/v1\n    region: EU\n    models: []\n',
    );
    const { exited, output } = spawnGateway({ ...baseEnv(), SVC_CATALOG: bad });
    assert.equal(await exited, 1);
    assert.match(output(), /configuration error: invalid catalogue .*bad\.yaml/);
    assert.match(output(), /suppliers\[0\]\.protocol/);
    assert.match(output(), /suppliers\[0\]\.models/);
  });

  test('a missing admin key stops start-up naming SVC_ADMIN_KEY', async () => {
    const env: Record<string, string> = baseEnv();
    delete env.SVC_ADMIN_KEY;
    const { exited, output } = spawnGateway(env);
    assert.equal(await exited, 1);
    assert.match(output(), /SVC_ADMIN_KEY/);
  });

  test('SIGTERM: stops accepting, finishes the request in flight, exits 0', async () => {
    // A data directory of its own: seeding copies into it, which another test's gateway must not have used.
    const env = { ...baseEnv(), SVC_DATA_DIR: join(dir, 'data-sigterm') };
    // The key is created in the gateway's own embedded database (a migrated copy) before it starts.
    await seedEmbeddedDataDir(env.SVC_DATA_DIR);
    const db = await openDatabase({ kind: 'embedded', dataDir: env.SVC_DATA_DIR });
    const { secret } = await new KeyRepository(db.knex, env.SVC_KEY_PEPPER).create({ kind: 'managed', name: 'drain', source: 'api' });
    await db.close();

    const { child, exited, output } = spawnGateway(env);
    const base = await listeningUrl(output);
    assert.equal((await fetch(`${base}/health`)).status, 200);
    const inFlight = chat(base, secret, 'slow one');
    inFlight.catch(() => undefined); // awaited below; a test failing before that leaves no unhandled rejection
    await waitFor('the supplier to receive the call', () => supplier.received() === 1);
    child.kill('SIGTERM');
    // The supplier answers only once the gateway is draining: the request is in flight throughout.
    await waitFor('the gateway to start draining', () => /SIGTERM: draining/.test(output()));
    supplier.release();
    const response = await inFlight;
    assert.equal(response.status, 200, 'the request in flight completes');
    assert.equal(((await response.json()) as { object: string }).object, 'chat.completion');
    assert.equal(await exited, 0, output());
    await assert.rejects(fetch(`${base}/health`), 'no longer accepting connections');
  });

  // With Redis and PostgreSQL the audit writer runs in a worker thread (SVC_AUDIT_WRITER=auto):
  // the audit rows of answered requests, debits included, are in PostgreSQL once the process has
  // exited, written through the thread and flushed by the drain.
  test.skipIf(!process.env.DATABASE_URL || !process.env.REDIS_URL)(
    'real services: the audit writer thread writes every answered request and is flushed on SIGTERM',
    async () => {
      supplier.release();
      const db = await createTestDatabase();
      onTestFinished(() => db.close());
      const env = { ...baseEnv(), DATABASE_URL: db.url, LOG_LEVEL: 'info' };
      const { secret } = await new KeyRepository(db.knex, env.SVC_KEY_PEPPER).create({
        kind: 'managed',
        name: 'thread',
        source: 'api',
        payerId: 'org_thread',
      });
      // Funds for the payer (the gateway loads the balance from the ledger on first use).
      await db
        .knex('wallet_entries')
        .insert({ payer_id: 'org_thread', amount_nano: 10e9, amount_micro: 10e6, kind: 'credit', reason: 'test', actor: 'test' });
      const { child, exited, output } = spawnGateway(env);
      const base = await listeningUrl(output);
      const requests = 12;
      for (let i = 0; i < requests; i += 1) {
        const response = await chat(base, secret, `request ${i}`);
        assert.equal(response.status, 200, await response.text());
      }
      child.kill('SIGTERM');
      assert.equal(await exited, 0, output());
      const rows = await db.knex('audit_log').count<{ n: string }[]>('* as n');
      assert.equal(Number(rows[0]!.n), requests, 'one audit row per answered request');
      const debits = await db.knex('wallet_entries').where({ payer_id: 'org_thread', kind: 'debit' }).count<{ n: string }[]>('* as n');
      assert.equal(Number(debits[0]!.n), requests, 'one debit per request, written with its row');
      assert.match(output(), /audit writer: thread/, 'the writer ran in its thread');
      assert.doesNotMatch(output(), /audit writer thread (failed|exited)/);
    },
  );

  // SVC_AUDIT_WRITER=off with `npm run audit-writer` beside it (the chart's separate writer):
  // the gateway only appends, the writer process writes.
  test.skipIf(!process.env.DATABASE_URL || !process.env.REDIS_URL)(
    'real services: a gateway with its writer off, and the separate audit writer process writing its records',
    { timeout: 120_000 },
    async () => {
      supplier.release();
      const db = await createTestDatabase();
      onTestFinished(() => db.close());
      const env = { ...baseEnv(), DATABASE_URL: db.url, LOG_LEVEL: 'info' };
      const { secret } = await new KeyRepository(db.knex, env.SVC_KEY_PEPPER).create({ kind: 'managed', name: 'apart', source: 'api' });
      const gateway = spawnGateway({ ...env, SVC_AUDIT_WRITER: 'off' });
      const base = await listeningUrl(gateway.output);
      assert.match(gateway.output(), /audit writer: off/);
      // The writer runs before the requests: on a loaded machine its start-up can outlast the
      // 5 s after which the gateway's journal writes overdue records itself, which is not what
      // this test is about.
      const writer = spawnGateway(env, 'gateway/src/audit-writer-main.ts');
      await waitFor('the audit writer to start', () => /audit writer running/.test(writer.output()), 60_000);
      const requests = 5;
      for (let i = 0; i < requests; i += 1) {
        const response = await chat(base, secret, `apart ${i}`);
        assert.equal(response.status, 200);
      }
      const count = async () => Number((await db.knex('audit_log').count<{ n: string }[]>('* as n'))[0]!.n);
      await waitFor('the audit writer to write every record', async () => (await count()) === requests, 60_000);
      // The writer process read them (its consumer is in the group), not the gateway's journal
      // falling back to writing overdue records itself.
      const redis = new Redis(process.env.REDIS_URL!);
      onTestFinished(() => void redis.disconnect());
      const consumers = (await redis.xinfo('CONSUMERS', `${env.SVC_STORE_PREFIX}audit`, 'audit-writers')) as unknown[][];
      const names = consumers.map((fields) => fields[fields.indexOf('name') + 1]);
      assert.ok(names.includes(`${hostname()}-${writer.child.pid}`), `the separate writer is a consumer (${names.join(', ')})`);
      assert.ok(!names.includes(`${hostname()}-${gateway.child.pid}`), 'the gateway itself reads nothing');
      writer.child.kill('SIGTERM');
      gateway.child.kill('SIGTERM');
      assert.equal(await writer.exited, 0, writer.output());
      assert.equal(await gateway.exited, 0, gateway.output());
    },
  );

  // SVC_WORKERS: one port, several gateway processes; the primary supervises and aggregates metrics.
  // Four process start-ups (primary, two workers, a replacement): a longer timeout than the default.
  test.skipIf(!process.env.DATABASE_URL || !process.env.REDIS_URL)(
    'real services: SVC_WORKERS=2 serves from two processes, replaces a worker that dies, sums their metrics and drains on SIGTERM',
    { timeout: 180_000 },
    async () => {
      supplier.release();
      const db = await createTestDatabase();
      onTestFinished(() => db.close());
      const metricsPort = await freePort();
      const env = { ...baseEnv(), DATABASE_URL: db.url, SVC_WORKERS: '2', SVC_METRICS_PORT: String(metricsPort) };
      const { secret } = await new KeyRepository(db.knex, env.SVC_KEY_PEPPER).create({ kind: 'managed', name: 'workers', source: 'api' });
      const { child, exited, output } = spawnGateway(env);
      // Each step has its own deadline; a step that fails or hangs reports the gateway's output.
      const step = <T>(what: string, work: Promise<T>, ms = 30_000): Promise<T> =>
        withDeadline(work, ms, () => `${what} took over ${ms} ms`).catch((error: Error) => {
          throw new Error(`${error.message}; gateway output:\n${output()}`);
        });
      const base = await listeningUrl(output);
      assert.match(output(), /workers: 2; metrics: http:/);
      const workerPids = () => childPids(child.pid!);
      assert.equal(workerPids().length, 2, `two worker processes (${workerPids().join(', ')}): ${output()}`);

      const served = async (i: number) => {
        // A new connection each time, so either worker may accept it.
        const response = await step(`request ${i}`, chat(base, secret, `worker ${i}`, { connection: 'close' }));
        assert.equal(response.status, 200);
        await step(`request ${i}'s body`, response.text());
      };
      for (let i = 0; i < 6; i += 1) await served(i);

      const [victim] = workerPids();
      process.kill(victim!, 'SIGKILL');
      await step(
        'a replacement worker',
        waitFor('a replacement worker', () => workerPids().length === 2 && !workerPids().includes(victim!), 45_000),
        50_000,
      );
      await served(100);
      for (let i = 0; i < 4; i += 1) await served(200 + i);

      // The primary's /metrics is the sum over the live workers: the killed one's counts went with it.
      const text = await step(
        'the aggregated scrape',
        fetch(`http://127.0.0.1:${metricsPort}/metrics`).then((r) => r.text()),
      );
      const answered = [...text.matchAll(/^svc_gateway_requests_total\{[^}]*status="200"[^}]*\} (\d+)/gm)].reduce(
        (n, m) => n + Number(m[1]),
        0,
      );
      assert.ok(answered >= 5 && answered <= 11, `aggregated 200s of the live workers (${answered}): ${text}`);
      assert.equal((await step('the primary health check', fetch(`http://127.0.0.1:${metricsPort}/health`))).status, 200);

      child.kill('SIGTERM');
      assert.equal(await step('the drain on SIGTERM', exited, 60_000), 0, output());
      assert.deepEqual(childPids(child.pid!), [], 'no worker left behind');
    },
  );

  // Found by an outside probe: a gateway started while Redis was down exited (or, Redis frozen,
  // never listened), so a restart or scale-up during an outage added no capacity.
  test('started while Redis is down, it listens and serves a key without limits', async () => {
    const env = {
      ...baseEnv(),
      SVC_DATA_DIR: join(dir, 'data-store-down'),
      REDIS_URL: `redis://127.0.0.1:${await freePort()}`,
      SVC_STORE_PREFIX: 'down:',
    };
    await seedEmbeddedDataDir(env.SVC_DATA_DIR);
    const db = await openDatabase({ kind: 'embedded', dataDir: env.SVC_DATA_DIR });
    const { secret } = await new KeyRepository(db.knex, env.SVC_KEY_PEPPER).create({ kind: 'managed', name: 'no store', source: 'api' });
    await db.close();
    supplier.release();
    const { child, exited, output } = spawnGateway(env);
    const base = await listeningUrl(output);
    const response = await chat(base, secret, 'served without the store');
    assert.equal(response.status, 200, await response.clone().text());
    child.kill('SIGTERM');
    await exited;
  });

  // Found by an outside probe: gateways on one database with different prefixes each kept their own
  // budget counters and key cache. Refused before the store is used, even with Redis down.
  test('a database bound to another store prefix stops start-up, naming both prefixes', async () => {
    const env = {
      ...baseEnv(),
      SVC_DATA_DIR: join(dir, 'data-bound-elsewhere'),
      REDIS_URL: `redis://127.0.0.1:${await freePort()}`,
      SVC_STORE_PREFIX: 'mine:',
    };
    await seedEmbeddedDataDir(env.SVC_DATA_DIR);
    const db = await openDatabase({ kind: 'embedded', dataDir: env.SVC_DATA_DIR });
    await db.knex('store_binding').insert({ prefix: 'theirs:', installation: 'other' });
    await db.close();
    const { exited, output } = spawnGateway(env);
    assert.equal(await exited, 1, output());
    assert.match(output(), /bound to store prefix "theirs:", but SVC_STORE_PREFIX is "mine:"/);
    assert.match(output(), /SVC_STORE_REBIND=1/);
  });

  test('SVC_WORKERS above 1 on the embedded defaults is refused at start-up', async () => {
    const env: Record<string, string> = { ...baseEnv(), SVC_WORKERS: '2' };
    delete env.REDIS_URL;
    const { exited, output } = spawnGateway(env);
    assert.equal(await exited, 1);
    assert.match(output(), /configuration error: SVC_WORKERS=2 needs REDIS_URL and DATABASE_URL/);
  });

  test('the separate audit writer refuses to start without the shared Redis and PostgreSQL', async () => {
    const env: Record<string, string> = baseEnv();
    delete env.REDIS_URL;
    const { exited, output } = spawnGateway(env, 'gateway/src/audit-writer-main.ts');
    assert.equal(await exited, 1);
    assert.match(output(), /configuration error: the audit writer needs REDIS_URL and DATABASE_URL/);
  });
});
