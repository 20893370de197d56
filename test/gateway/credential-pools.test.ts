// Supplier credential pools through the whole gateway and the official SDK: calls are spread over
// the pool; a credential the supplier rate-limits or rejects is sidelined and the same request is
// retried on the next credential (the client never sees it), without opening the supplier's
// circuit; every replica skips a sidelined credential; each event lands in the token log; a
// credential whose cool-down passed and that works again is logged recovered, once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { supplierOpenKey } from '../../core/routing/index.js';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.js';
import { waitFor } from '../support/wait-for.js';

/** How the fake supplier answers each key; counts what it saw. */
const behaviour: Record<string, 'ok' | 'rate_limited' | 'rejected'> = {
  'key-a': 'rate_limited',
  'key-b': 'ok',
  'key-c': 'rejected',
  'key-d': 'rate_limited',
};
const seen: Record<string, number> = {};
let server: Server;
let harness: GatewayHarness;
const supplier = `pool-${process.pid}`;
/**
 * The gateways' clock: real time plus what the test moved it on. A rate-limited credential's
 * cool-down is long (60 s), so the first test's credential stays out however slow a loaded machine
 * is (with 1.5 s it came back mid-test once and was tried twice); the second test moves the clock
 * past it rather than waiting.
 */
const rateLimitedCooldownMs = 60_000;
let clockOffsetMs = 0;
const clock = () => Date.now() + clockOffsetMs;

function answer(model: string) {
  return {
    id: 'chatcmpl-pool',
    object: 'chat.completion',
    created: 1,
    model,
    choices: [{ index: 0, message: { role: 'assistant', content: 'from the pool' }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
  };
}

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const key = (req.headers.authorization ?? '').replace('Bearer ', '');
      seen[key] = (seen[key] ?? 0) + 1;
      const how = behaviour[key];
      res.setHeader('content-type', 'application/json');
      if (how === 'ok') return res.end(JSON.stringify(answer((JSON.parse(body) as { model: string }).model)));
      if (how === 'rate_limited') {
        res.writeHead(429);
        return res.end(
          JSON.stringify({ error: { message: 'Rate limit reached for this key', type: 'requests', code: 'rate_limit_exceeded' } }),
        );
      }
      res.writeHead(401);
      res.end(JSON.stringify({ error: { message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  harness = await startGatewayHarness(
    [
      {
        name: supplier,
        region: 'EU',
        baseUrl: url,
        credentials: [
          { name: 'key-a', api_key_env: 'POOL_KEY_A' },
          { name: 'key-b', api_key_env: 'POOL_KEY_B' },
          { name: 'key-c', api_key_env: 'POOL_KEY_C' },
        ],
      },
    ],
    {
      settings: {
        POOL_KEY_A: 'key-a',
        POOL_KEY_B: 'key-b',
        POOL_KEY_C: 'key-c',
        SVC_CREDENTIAL_RATE_LIMITED_COOLDOWN_MS: String(rateLimitedCooldownMs),
        SVC_CREDENTIAL_AUTH_FAILURE_COOLDOWN_MS: '600000',
      },
      clock,
    },
  );
});
afterAll(async () => {
  await harness?.close();
  await new Promise((resolve) => server?.close(resolve));
});

const events = async () =>
  (await harness.database.knex('credential_events').where({ provider: supplier }).orderBy('id')) as {
    key_name: string;
    kind: string;
    error_kind: string | null;
    upstream_status: number | null;
    source: string;
    sidelined_until: Date | null;
  }[];

describe('credential pools', () => {
  it('a rate-limited or rejected credential is sidelined and the request is served with the next one', async () => {
    const { id, secret } = await harness.createKeyWithId();
    const sdk = new OpenAI({ baseURL: `${harness.gateway.url}/v1`, apiKey: secret, maxRetries: 0 });
    const ask = () => sdk.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
    for (let i = 0; i < 6; i++) expect((await ask()).choices[0]!.message.content).toBe('from the pool');
    // a and c were each tried once, then left alone; b served everything.
    expect(seen).toEqual({ 'key-a': 1, 'key-b': 6, 'key-c': 1 });
    // The supplier's circuit stayed closed: the faults were the credentials'.
    expect(await harness.store.get(supplierOpenKey(supplier))).toBeNull();
    // The audit log shows the failed credential attempts inside the served requests.
    await waitFor('the audit rows', async () => (await harness.auditOf(id)).length === 6);
    const attempts = (await harness.auditOf(id)).map((r) => r.attempts.map((a) => `${a.outcome}:${a.credential}`).join(','));
    expect(attempts.sort()).toEqual(['failed:key-a,ok:key-b', 'failed:key-c,ok:key-b', ...Array(4).fill('ok:key-b')].sort());

    await waitFor('both events in the token log', async () => (await events()).length >= 2);
    const logged = await events();
    expect(logged.find((e) => e.key_name === 'key-a')).toMatchObject({
      kind: 'rate_limited',
      error_kind: 'rate_limit_exceeded',
      upstream_status: 429,
      source: 'gateway',
    });
    expect(logged.find((e) => e.key_name === 'key-c')).toMatchObject({ kind: 'auth_failure', upstream_status: 401 });
    const until = logged.find((e) => e.key_name === 'key-c')!.sidelined_until!;
    expect(new Date(until).getTime()).toBeGreaterThan(Date.now() + 500_000);

    // Another replica skips the rejected credential too: it was announced through the store.
    const replica = await harness.startReplica();
    const other = new OpenAI({ baseURL: `${replica.url}/v1`, apiKey: secret, maxRetries: 0 });
    for (let i = 0; i < 4; i++) await other.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
    expect(seen['key-c']).toBe(1);
  });

  it('a credential back after its cool-down is logged recovered once; with every credential failing the client gets the error', async () => {
    behaviour['key-a'] = 'ok';
    // key-a's cool-down has passed (key-c's, ten minutes, has not).
    clockOffsetMs += rateLimitedCooldownMs + 1_000;
    const secret = await harness.createKey();
    const sdk = new OpenAI({ baseURL: `${harness.gateway.url}/v1`, apiKey: secret, maxRetries: 0 });
    const before = seen['key-a']!;
    await waitFor(
      'key-a in rotation again and logged recovered',
      async () => {
        await sdk.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
        return (await events()).some((e) => e.key_name === 'key-a' && e.kind === 'recovered');
      },
      10_000,
      100,
    );
    expect(seen['key-a']!).toBeGreaterThan(before);
    await new Promise((resolve) => setImmediate(resolve));
    expect((await events()).filter((e) => e.kind === 'recovered')).toHaveLength(1);

    // Every credential fails: the request fails with the supplier's error, and the circuit hears of it.
    behaviour['key-a'] = 'rate_limited';
    behaviour['key-b'] = 'rate_limited';
    const failure = await sdk.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(failure).toBeInstanceOf(OpenAI.APIError);
    expect((failure as InstanceType<typeof OpenAI.APIError>).status).toBe(429);
  });
});
