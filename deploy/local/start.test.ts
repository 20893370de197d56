// The newcomer path end to end: `npm start`'s entry on free ports, the banner's export line and
// curl call, a card top-up through the local test processor, a second start on the same data
// directory refused, a crashed start's lock taken over.
import { afterEach, expect, test } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../test/support/free-port.js';
import { PortalClient } from '../../test/support/portal-client.js';
import { payOnHostedPage } from '../../test/support/stripe-double.js';
import { waitFor } from '../../test/support/wait-for.js';

const root = join(import.meta.dirname, '../..');
const cleanups: Array<() => void> = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

interface Started {
  child: ChildProcess;
  output: () => string;
  exitCode: () => number | null | undefined;
  /** The signal that ended the process, when one did (a crash: SIGABRT, SIGSEGV). */
  signal: () => NodeJS.Signals | null;
}

function start(dataDir: string, env: Record<string, string> = {}): Started {
  const child = spawn(process.execPath, ['--import', 'tsx', 'deploy/local/start.ts'], {
    cwd: root,
    // Free ports everywhere, so the test never collides with a developer's `npm start`.
    env: {
      ...process.env,
      SVC_DATA_DIR: dataDir,
      PORT: '0',
      PORTAL_PORT: '0',
      SIM_PORT: '0',
      SVC_METRICS_PORT: '0',
      LOG_LEVEL: 'warn',
      // On the real services every start of every run shares one database while the simulator
      // takes a new port each time: a database catalogue would keep the first start's address
      // (docs/configuration.md, "Catalogue source"), so there the generated file stays the truth.
      // On the embedded default each data directory is a fresh database and the default applies.
      ...(process.env.DATABASE_URL && { SVC_CATALOG_SOURCE: 'file' }),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  cleanups.push(() => void child.kill('SIGKILL'));
  let output = '';
  let exitCode: number | null | undefined;
  let signal: NodeJS.Signals | null = null;
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.on('exit', (code, killedBy) => {
    exitCode = code;
    signal = killedBy;
  });
  return { child, output: () => output, exitCode: () => exitCode, signal: () => signal };
}

async function banner(started: Started): Promise<{ gateway: string; key: string }> {
  await waitFor('the start banner', () => started.output().includes('Ctrl-C stops everything') || started.exitCode() !== undefined, 90_000);
  const text = started.output();
  const gateway = /gateway {5}(http:\/\/\S+)/.exec(text)?.[1];
  const key = /^export SVC_KEY=(\S+)$/m.exec(text)?.[1];
  if (!gateway || !key) throw new Error(`no banner:\n${text}`);
  return { gateway, key };
}

// Three process starts (tsx, PGlite, migrations): slow on a busy machine, so a generous ceiling.
test('npm start prints a key to export that answers the README call; one start per data directory', { timeout: 240_000 }, async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-start-'));
  cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));

  const first = start(dataDir);
  const { gateway, key } = await banner(first);
  expect(first.output()).toMatch(/simulator {3}http:\/\/127\.0\.0\.1:\d+/);
  // The portal runs beside the gateway, and its printed demo owner can sign in.
  const [, portalUrl, ownerPassword] = /Portal: (http:\/\/\S+) +sign in as owner@demo\.local \/ (\S+) \(owner\)/.exec(first.output()) ?? [];
  const login = await fetch(`${portalUrl}/auth/login`, {
    method: 'POST',
    headers: { origin: portalUrl!, 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'owner@demo.local', password: ownerPassword }),
  });
  expect(await login.json()).toMatchObject({ user: { role: 'owner', email_verified: true } });
  await topUpThroughTheLocalProcessor(first.output(), portalUrl!, ownerPassword!, gateway);
  expect(first.output()).toContain('metrics     off (SVC_METRICS_PORT=0)');
  const response = await fetch(`${gateway}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hello!' }] }),
  });
  expect(response.status).toBe(200);
  const reply = (await response.json()) as { choices: Array<{ message: { content: string } }> };
  expect(reply.choices[0]!.message.content).toContain('Hello!');

  const second = start(dataDir);
  await waitFor('the second start to give up', () => second.exitCode() !== undefined, 90_000);
  expect(second.exitCode()).toBe(1);
  expect(second.output()).toContain(`in use by process ${first.child.pid}`);

  // A start that died without cleaning up leaves a stale lock; the next start takes it over,
  // keeps the demo key, and follows OTEL_* like the gateway's own entry point.
  first.child.kill('SIGKILL');
  await waitFor('the first start to die', () => first.exitCode() !== undefined);
  // The two ports that are otherwise any free one can be pinned (PAYMENTS_PORT, PORTAL_METRICS_PORT).
  const [paymentsPort, portalMetricsPort] = [await freePort(), await freePort()];
  const third = start(dataDir, {
    OTEL_TRACES_EXPORTER: 'console',
    PAYMENTS_PORT: String(paymentsPort),
    PORTAL_METRICS_PORT: String(portalMetricsPort),
  });
  const again = await banner(third);
  expect(again.key).toBe(key);
  expect(third.output()).toContain('tracing     OTEL_TRACES_EXPORTER=console');
  expect(third.output()).toContain(`Payments: local TEST processor at http://127.0.0.1:${paymentsPort} `);
  expect(third.output()).toContain(`Portal metrics: http://127.0.0.1:${portalMetricsPort}/metrics`);
  // The simulator took another free port this time: on the embedded default, whose database keeps
  // the first start's catalogue, the stored demo providers were moved to it (outside probe: a start
  // on another SIM_PORT answered every request 503 provider_unavailable), and the key is served.
  if (!process.env.DATABASE_URL)
    expect(third.output()).toMatch(/The demo providers pointed at http:\/\/127\.0\.0\.1:\d+\/v1: moved to the simulator/);
  const served = await fetch(`${again.gateway}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hello again' }] }),
  });
  expect(served.status, await served.clone().text()).toBe(200);
  expect(await (await fetch(`http://127.0.0.1:${portalMetricsPort}/metrics`)).text()).toContain('# TYPE');
  third.child.kill('SIGTERM');
  await waitFor('the third start to stop', () => third.exitCode() !== undefined, 60_000);
  // Exit 0 once everything closed: the handlers are in place before the banner says it is running
  // (a SIGTERM sent on reading the banner once ended the process by the signal in CI).
  expect({ code: third.exitCode(), signal: third.signal() }, third.output()).toEqual({ code: 0, signal: null });
  expect(third.output()).toContain('SIGTERM: stopped');
});

/**
 * The demo owner makes a key in the portal and calls the gateway with it (refused while the wallet
 * is empty), tops up $10 through the printed local test processor, sees it credited, and the same
 * key is served: the portal and the gateway share one store, so the credit reached the gateway's
 * wallet mirror (with two in-process stores the gateway kept its empty mirror).
 */
async function topUpThroughTheLocalProcessor(output: string, portalUrl: string, ownerPassword: string, gateway: string): Promise<void> {
  const processorUrl = /Payments: local TEST processor at (http:\/\/\S+)/.exec(output)?.[1];
  expect(processorUrl, output).toBeDefined();
  const owner = new PortalClient(portalUrl);
  expect((await owner.postJson('/auth/login', { email: 'owner@demo.local', password: ownerPassword })).status).toBe(200);
  const made = (await (await owner.postJson('/dashboard/keys/new', { name: 'from the portal' })).json()) as { secret: string };
  const call = () =>
    fetch(`${gateway}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${made.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Paid call' }] }),
    }).then((r) => r.status);
  // Refused on a fresh data directory (empty wallet); served on the real services if earlier runs funded it.
  expect([200, 403]).toContain(await call());
  const config = (await (await owner.get('/api/billing/processor-config')).json()) as Record<string, unknown>;
  expect(config).toMatchObject({ configured: true, test_mode: true });
  // The data directory is fresh, but on the real services the demo owner may already hold funds.
  const before = ((await (await owner.get('/dashboard/billing', { accept: 'application/json' })).json()) as { balance_usd: number })
    .balance_usd;
  const started = await owner.postJson('/api/billing/checkout', { amount: 10 });
  const checkout = (await started.json()) as { url: string };
  expect(started.status, JSON.stringify(checkout)).toBe(200);
  expect(checkout.url.startsWith(`${processorUrl}/`)).toBe(true);
  const paid = await payOnHostedPage(checkout.url);
  if (!('redirect' in paid)) throw new Error(`the local processor refused the test card: ${paid.refused}`);
  const sessionId = new URL(paid.redirect).searchParams.get('session_id');
  let status: Record<string, unknown> = {};
  await waitFor('the webhook credit', async () => {
    status = (await (await owner.get(`/api/billing/checkout-status?session_id=${sessionId}`)).json()) as Record<string, unknown>;
    return status.status === 'credited';
  });
  // The ledger entry of this checkout is exactly the $10 (the balance itself may also move by the
  // first call's debit, written asynchronously, when earlier runs left funds on the real services).
  expect((status.entry as { amount_usd: number }).amount_usd).toBe(10);
  expect(status.balance_usd as number).toBeGreaterThanOrEqual(before + 10 - 0.01);
  await waitFor('the gateway to serve the portal key after the top-up', async () => (await call()) === 200, 2_000);
}
