// Routing, failover and session affinity end to end: a gateway in front of several supplier
// simulators (one per supplier, all serving `gpt-4o-mini`, with different names, regions,
// priorities and weights), driven through the OpenAI SDK and plain HTTP. Faults are injected in
// the simulators; where a simulator cannot show what is asserted (a custom error code, the
// supplier side of a client disconnect) a small node:http supplier of the test's own stands in.
// Each scenario group has its own harness so circuit state and session pins never leak between
// groups; requests that should not be pinned by the conversation heuristic get unique texts.
// Nothing here waits a fixed time: cooldowns run on a clock the test moves, circuit changes are
// awaited on the gateways' own /metrics, and what a request did is read from its audit record.
import { afterAll, beforeAll, describe, test } from 'vitest';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import OpenAI from 'openai';
import type { ChatCompletionCreateParamsNonStreaming, ChatCompletionCreateParamsStreaming } from 'openai/resources/chat/completions';
import { replyText } from '../simulator/deterministic.js';
import type { RunningSimulator } from '../simulator/server.js';
import { createTestDatabase } from '../../core/db/testing.js';
import type { Database } from '../../core/db/index.js';
import {
  startGatewayHarness,
  type GatewayHarness,
  type HarnessAuditRecord,
  type HarnessOptions,
  type HarnessSupplier,
} from '../support/gateway-harness.js';
import { scrape } from '../observability/scrape.js';
import { waitFor } from '../support/wait-for.js';

const model = 'gpt-4o-mini';
/** A failure threshold no test reaches: circuits stay closed unless a 429 with Retry-After opens one. */
const noCircuit = { SVC_CIRCUIT_FAILURES: '100000' };

// One database for the whole file (each harness creates its own keys in it): creating and
// migrating a database per harness would be most of the file's run time.
let database: Database;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database.close();
});
/** A harness over the file's shared database. */
const harness = (suppliers: HarnessSupplier[], options: HarnessOptions = {}) => startGatewayHarness(suppliers, { ...options, database });

let counter = 0;
/** A text no other request uses, so the conversation heuristic does not pin the request. */
const unique = (label: string) => `${label} number ${++counter} ${randomUUID()}`;

/** A clock the test moves by hand, for the gateways' circuit cooldowns. */
function manualClock(): { now: () => number; advance(ms: number): void } {
  let now = Date.now();
  return {
    now: () => now,
    advance: (ms) => {
      now += ms;
    },
  };
}

/** Waits until the gateway (harness option `metrics`) reports the supplier's circuit open (1) or closed (0). */
async function circuitReported(gateway: { metricsUrl: string | undefined }, supplier: string, open: boolean): Promise<void> {
  await waitFor(`the circuit of ${supplier} ${open ? 'open' : 'closed'} on ${gateway.metricsUrl}`, async () => {
    const samples = (await scrape(gateway.metricsUrl!)).matching('svc_gateway_supplier_circuit_open', { supplier });
    return samples.length === 1 && samples[0]!.value === (open ? 1 : 0);
  });
}

/** The key's audit records once `count` of them are written (the audit writer is asynchronous). */
async function auditRecords(h: GatewayHarness, keyId: string, count: number): Promise<HarnessAuditRecord[]> {
  let records: HarnessAuditRecord[] = [];
  await waitFor(`${count} audit records of key ${keyId}`, async () => (records = await h.auditOf(keyId)).length >= count);
  return records;
}

interface JsonReply {
  status: number;
  headers: Headers;
  body: any;
}

/** POSTs a chat completion (model defaulted) with plain fetch and parses the JSON answer. */
async function chat(
  gatewayUrl: string,
  key: string,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<JsonReply> {
  const res = await fetch(`${gatewayUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model, ...body }),
  });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = text;
  }
  return { status: res.status, headers: res.headers, body: parsed };
}

/** A one-message chat with a unique text. */
const ask = (gatewayUrl: string, key: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
  chat(gatewayUrl, key, { messages: [{ role: 'user', content: unique('Tell me something') }], ...extra }, headers);

/** The supplier that answered, asserting the request succeeded. */
function answeredBy(reply: JsonReply): string {
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  return reply.headers.get('x-svc-supplier') ?? '(none)';
}

interface RawReply {
  status: number;
  headers: IncomingHttpHeaders;
  trailers: NodeJS.Dict<string>;
  text: string;
}

/** A POST through node:http, which exposes HTTP trailers once the body has ended. */
function rawPost(gatewayUrl: string, path: string, body: unknown, headers: Record<string, string>): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${gatewayUrl}${path}`,
      { method: 'POST', headers: { 'content-type': 'application/json', ...headers } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, trailers: res.trailers, text }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

/** `data:` payloads of an SSE body (any `event:` line is ignored). */
function sseData(text: string): string[] {
  return text
    .split(/\n\n/)
    .map((frame) =>
      frame
        .split('\n')
        .filter((l) => l.startsWith('data: '))
        .map((l) => l.slice(6))
        .join('\n'),
    )
    .filter((d) => d !== '');
}

/** Cost the gateway should report: tokens × the catalogue's USD per million tokens. */
const expectedCost = (input: number, output: number, prices: { input: number; output: number }) =>
  (input * prices.input + output * prices.output) / 1e6;

function assertCost(header: string | null | undefined, input: number, output: number, prices: { input: number; output: number }): void {
  assert.ok(header !== undefined && header !== null, 'x-svc-cost-usd is present');
  assert.ok(
    Math.abs(Number(header) - expectedCost(input, output, prices)) < 1e-12,
    `cost ${header} ≠ ${expectedCost(input, output, prices)}`,
  );
}

/** Empties a simulator's request recording (the array is shared with the simulator). */
function clear(...sims: RunningSimulator[]): void {
  for (const sim of sims) sim.requests.length = 0;
}

/** A supplier written by the test: node:http, records requests and when their sockets closed. */
interface FakeSupplier {
  /** Base URL including `/v1`, for the catalogue. */
  url: string;
  requests: { path: string; body: Record<string, unknown>; at: number }[];
  /** performance.now() of each `res` 'close' of a request, in arrival order. */
  closedAt: number[];
  close(): Promise<void>;
}

async function startFakeSupplier(
  handle: (req: IncomingMessage, res: ServerResponse, body: Record<string, unknown>) => void,
): Promise<FakeSupplier> {
  const fake: FakeSupplier = { url: '', requests: [], closedAt: [], close: async () => undefined };
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    res.on('close', () => fake.closedAt.push(performance.now()));
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => (text += d));
    req.on('end', () => {
      const body = JSON.parse(text || '{}') as Record<string, unknown>;
      fake.requests.push({ path: req.url ?? '', body, at: performance.now() });
      handle(req, res, body);
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  fake.close = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      for (const socket of sockets) socket.destroy();
    });
  return fake;
}

/**
 * A port nothing listens on, so connecting is refused at once. Not a freed ephemeral port: by
 * the time the test connects, a server of another suite (listening on port 0) may have been
 * given that very port and answered for the "refused" supplier (seen once on CI). Ports below
 * 1024 are never handed out as ephemeral ports, and nothing on a test machine serves port 1.
 */
const refusedPort = 1;

// ---------------------------------------------------------------------------------------------

describe('failover on 429 and the Retry-After cooldown (default circuit settings)', () => {
  let h: GatewayHarness;
  let key: string;
  let primary: RunningSimulator;
  let secondary: RunningSimulator;
  const clock = manualClock();

  beforeAll(async () => {
    h = await harness(
      [
        { name: 'primary-eu', region: 'EU', priority: 1 },
        { name: 'secondary-eu', region: 'EU', priority: 2 },
      ],
      { clock: clock.now, metrics: true },
    );
    key = await h.createKey();
    primary = h.simulators.get('primary-eu')!;
    secondary = h.simulators.get('secondary-eu')!;
  });
  afterAll(() => h?.close());

  test('without faults the primary answers, x-svc-failover: false', async () => {
    const reply = await ask(h.gateway.url, key);
    assert.equal(answeredBy(reply), 'primary-eu');
    assert.equal(reply.headers.get('x-svc-failover'), 'false');
  });

  test('primary 429 (Retry-After 1 s) → the secondary answers with x-svc-failover: true; the primary is skipped during the cooldown and used again after it', async () => {
    clear(primary, secondary);
    primary.setFaults({ status: 429, retryAfterSeconds: 1, failFirst: 1 });
    const client = new OpenAI({ baseURL: `${h.gateway.url}/v1`, apiKey: key, maxRetries: 0 });
    const { data, response } = await client.chat.completions
      .create({ model, messages: [{ role: 'user', content: unique('Rate limited please') }] })
      .withResponse();
    assert.ok((data.choices[0]!.message.content ?? '').startsWith('Simulated reply to:'));
    assert.equal(response.headers.get('x-svc-supplier'), 'secondary-eu');
    assert.equal(response.headers.get('x-svc-region'), 'EU');
    assert.equal(response.headers.get('x-svc-failover'), 'true');
    assert.equal(primary.requests.length, 1, 'the primary was tried once');
    assert.equal(secondary.requests.length, 1);
    // The 429 is reported to the supplier's health after the answer went out.
    await circuitReported(h.gateway, 'primary-eu', true);

    // Within the Retry-After the primary's circuit is open: not tried at all, and the answer still
    // reports that the preferred supplier was not used (docs/routing.md). The clock stands still,
    // then moves to the last millisecond of the Retry-After.
    for (const advanceMs of [0, 0, 999]) {
      clock.advance(advanceMs);
      const reply = await ask(h.gateway.url, key);
      assert.equal(answeredBy(reply), 'secondary-eu');
      assert.equal(reply.headers.get('x-svc-failover'), 'true');
    }
    assert.equal(primary.requests.length, 1, 'the primary is skipped while cooling down');

    // Issue: "Retry-After from a 429 cools that supplier down (its circuit opens for that long)".
    clock.advance(1);
    const reply = await ask(h.gateway.url, key);
    assert.equal(
      answeredBy(reply),
      'primary-eu',
      'after a 429 with Retry-After: 1 the primary should be used again once the 1 s elapsed (the circuit opens "for that long")',
    );
    assert.equal(primary.requests.length, 2);
  });
});

describe('Retry-After longer than the circuit cooldown (SVC_CIRCUIT_COOLDOWN_MS=100)', () => {
  let h: GatewayHarness;
  let key: string;
  const clock = manualClock();

  beforeAll(async () => {
    h = await harness(
      [
        { name: 'primary-eu', region: 'EU' },
        { name: 'secondary-eu', region: 'EU' },
      ],
      { settings: { SVC_CIRCUIT_COOLDOWN_MS: '100' }, clock: clock.now, metrics: true },
    );
    key = await h.createKey();
  });
  afterAll(() => h?.close());

  test('the primary is skipped for the whole Retry-After, then used again', async () => {
    const primary = h.simulators.get('primary-eu')!;
    primary.setFaults({ status: 429, retryAfterSeconds: 1, failFirst: 1 });
    const first = await ask(h.gateway.url, key);
    assert.equal(answeredBy(first), 'secondary-eu');
    assert.equal(first.headers.get('x-svc-failover'), 'true');
    await circuitReported(h.gateway, 'primary-eu', true);

    clock.advance(500); // past the 100 ms cooldown, within the 1 s Retry-After
    assert.equal(answeredBy(await ask(h.gateway.url, key)), 'secondary-eu');
    assert.equal(primary.requests.length, 1);

    clock.advance(500); // the Retry-After is over
    assert.equal(answeredBy(await ask(h.gateway.url, key)), 'primary-eu');
    assert.equal(primary.requests.length, 2);
  });
});

describe('timeouts and connection failures fail over', () => {
  const firstByteTimeoutMs = 300;
  // A whole-call deadline far beyond any test's ceiling: when the hanging attempt ends, the
  // first-byte timeout ended it. (A refused connection shows in its code: provider_unavailable,
  // where a connect timeout would be provider_timeout.)
  const neverMs = 600_000;
  let h: GatewayHarness;
  let key: string;
  let keyId: string;

  beforeAll(async () => {
    h = await harness(
      [
        // EU: the primary never answers; US: nothing listens on the primary's port.
        {
          name: 'hang-eu',
          region: 'EU',
          priority: 1,
          first_byte_timeout_ms: firstByteTimeoutMs,
          timeout_ms: neverMs,
          simulator: { faults: { hang: true } },
        },
        { name: 'ok-eu', region: 'EU', priority: 2 },
        { name: 'refused-us', region: 'US', priority: 1, baseUrl: `http://127.0.0.1:${refusedPort}/v1`, connect_timeout_ms: 1_000 },
        { name: 'ok-us', region: 'US', priority: 2 },
      ],
      { settings: noCircuit },
    );
    ({ id: keyId, secret: key } = await h.createKeyWithId());
  });
  afterAll(() => h?.close());

  /** The failed first attempt and the answering second one of a request, from its audit record. */
  async function attemptsOf(requestId: string | null): Promise<HarnessAuditRecord['attempts']> {
    let record: HarnessAuditRecord | undefined;
    await waitFor(
      `the audit record of ${requestId}`,
      async () => (record = (await h.auditOf(keyId)).find((r) => r.request_id === requestId)) !== undefined,
    );
    return record!.attempts;
  }

  test('primary hangs → the secondary answers once the first-byte timeout ends the attempt', async () => {
    const started = performance.now();
    const reply = await ask(h.gateway.url, key, { region: 'EU' });
    const elapsed = performance.now() - started;
    assert.equal(answeredBy(reply), 'ok-eu');
    assert.equal(reply.headers.get('x-svc-failover'), 'true');
    assert.equal(h.simulators.get('hang-eu')!.requests.length, 1);
    assert.ok(
      elapsed >= firstByteTimeoutMs,
      `elapsed ${elapsed.toFixed(0)} ms ≥ ${firstByteTimeoutMs} ms: the failover waited for the timeout`,
    );
    const [failed, answered] = await attemptsOf(reply.headers.get('x-request-id'));
    assert.deepEqual([failed?.supplier, failed?.outcome, failed?.code], ['hang-eu', 'failed', 'provider_timeout']);
    assert.ok(failed!.latency_ms >= firstByteTimeoutMs - 1, `the failed attempt took ${failed!.latency_ms} ms`);
    assert.deepEqual([answered?.supplier, answered?.outcome], ['ok-eu', 'ok']);
  });

  test('a streaming request whose primary hangs fails over the same way', async () => {
    const started = performance.now();
    const res = await fetch(`${h.gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, region: 'EU', stream: true, messages: [{ role: 'user', content: unique('stream while hanging') }] }),
    });
    const elapsed = performance.now() - started;
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-svc-supplier'), 'ok-eu');
    assert.equal(res.headers.get('x-svc-failover'), 'true');
    assert.ok((await res.text()).includes('[DONE]'));
    assert.ok(elapsed >= firstByteTimeoutMs, `elapsed ${elapsed.toFixed(0)} ms`);
    const [failed] = await attemptsOf(res.headers.get('x-request-id'));
    assert.deepEqual([failed?.supplier, failed?.code], ['hang-eu', 'provider_timeout']);
  });

  test('connection refused by the primary → the secondary answers at once (no timeout involved)', async () => {
    const reply = await ask(h.gateway.url, key, { region: 'US' });
    assert.equal(answeredBy(reply), 'ok-us');
    assert.equal(reply.headers.get('x-svc-failover'), 'true');
    const [failed, answered] = await attemptsOf(reply.headers.get('x-request-id'));
    assert.deepEqual([failed?.supplier, failed?.outcome, failed?.code], ['refused-us', 'failed', 'provider_unavailable']);
    assert.deepEqual([answered?.supplier, answered?.outcome], ['ok-us', 'ok']);
  });
});

describe('every candidate fails: the client sees the primary failure', () => {
  let h: GatewayHarness;
  let key: string;
  let client: OpenAI;

  beforeAll(async () => {
    h = await harness(
      [
        { name: 'primary-eu', region: 'EU', priority: 1, simulator: { faults: { status: 503 } } },
        { name: 'secondary-eu', region: 'EU', priority: 2, simulator: { faults: { status: 500 } } },
      ],
      { settings: noCircuit },
    );
    key = await h.createKey();
    client = new OpenAI({ baseURL: `${h.gateway.url}/v1`, apiKey: key, maxRetries: 0 });
  });
  afterAll(() => h.close());

  test('primary 503, secondary 500 → 503 with the primary code (OpenAI SDK), one request per simulator', async () => {
    const primary = h.simulators.get('primary-eu')!;
    const secondary = h.simulators.get('secondary-eu')!;
    clear(primary, secondary);
    await assert.rejects(
      client.chat.completions.create({ model, messages: [{ role: 'user', content: unique('both down') }] }),
      (e: unknown) => {
        assert.ok(e instanceof OpenAI.APIError, String(e));
        assert.equal(e.status, 503);
        // The simulator's OpenAI error body for 503 is {type: "server_error", code: null}; the type is the provider code.
        assert.equal(e.code, 'server_error');
        assert.match(e.message, /overloaded/);
        return true;
      },
    );
    assert.equal(primary.requests.length, 1);
    assert.equal(secondary.requests.length, 1);
  });

  test('the same through a stream request', async () => {
    await assert.rejects(
      client.chat.completions.create({ model, stream: true, messages: [{ role: 'user', content: unique('both down, streaming') }] }),
      (e: unknown) => e instanceof OpenAI.APIError && e.status === 503 && e.code === 'server_error',
    );
  });
});

describe('provider codes, client errors and SVC_MAX_ATTEMPTS', () => {
  let h: GatewayHarness;
  let key: string;
  let fake: FakeSupplier;
  let mode: 'overloaded' | 'bad-request' = 'overloaded';

  beforeAll(async () => {
    fake = await startFakeSupplier((_req, res) => {
      const [status, error] =
        mode === 'overloaded'
          ? [503, { message: 'Engine overloaded (fake)', type: 'server_error', param: null, code: 'engine_overloaded' }]
          : [
              400,
              {
                message: "Unsupported value: 'temperature' (fake)",
                type: 'invalid_request_error',
                param: 'temperature',
                code: 'unsupported_value',
              },
            ];
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ error }));
    });
    h = await harness(
      [
        { name: 'fake-eu', region: 'EU', priority: 1, baseUrl: fake.url },
        { name: 'second-eu', region: 'EU', priority: 2, simulator: { faults: { status: 500 } } },
        { name: 'third-eu', region: 'EU', priority: 3 },
      ],
      { settings: { ...noCircuit, SVC_MAX_ATTEMPTS: '2' } },
    );
    key = await h.createKey();
  });
  afterAll(async () => {
    await h.close();
    await fake.close();
  });

  test('SVC_MAX_ATTEMPTS=2: the third (healthy) candidate is never tried; the client gets the primary status and code', async () => {
    mode = 'overloaded';
    const client = new OpenAI({ baseURL: `${h.gateway.url}/v1`, apiKey: key, maxRetries: 0 });
    await assert.rejects(
      client.chat.completions.create({ model, messages: [{ role: 'user', content: unique('bounded') }] }),
      (e: unknown) => {
        assert.ok(e instanceof OpenAI.APIError, String(e));
        assert.equal(e.status, 503);
        assert.equal(e.code, 'engine_overloaded');
        return true;
      },
    );
    assert.equal(fake.requests.length, 1);
    assert.equal(h.simulators.get('second-eu')!.requests.length, 1);
    assert.equal(h.simulators.get('third-eu')!.requests.length, 0);
  });

  test('a client error (400) from the primary is returned at once, no failover', async () => {
    mode = 'bad-request';
    const before = h.simulators.get('second-eu')!.requests.length;
    const reply = await ask(h.gateway.url, key);
    assert.equal(reply.status, 400);
    assert.equal(reply.body.error.code, 'unsupported_value');
    assert.equal(h.simulators.get('second-eu')!.requests.length, before);
  });
});

describe('region locks are never broken by failover', () => {
  let h: GatewayHarness;
  let key: string;
  let euKey: string;
  let us: RunningSimulator;

  beforeAll(async () => {
    h = await harness(
      [
        // The US supplier has the best priority: only the region rules keep EU traffic off it.
        { name: 'us-1', region: 'US', priority: 0 },
        { name: 'eu-1', region: 'EU', priority: 1, simulator: { faults: { status: 503 } } },
        { name: 'eu-2', region: 'EU', priority: 2, simulator: { faults: { status: 503 } } },
      ],
      { settings: noCircuit },
    );
    key = await h.createKey();
    euKey = await h.createKey({ allowedRegions: ['EU'] });
    us = h.simulators.get('us-1')!;
  });
  afterAll(() => h.close());

  test('the US supplier answers an unrestricted call (it is reachable)', async () => {
    assert.equal(answeredBy(await ask(h.gateway.url, key)), 'us-1');
    clear(us);
  });

  test('an EU-locked key, every EU supplier down: the EU failure, the US simulator never called', async () => {
    const client = new OpenAI({ baseURL: `${h.gateway.url}/v1`, apiKey: euKey, maxRetries: 0 });
    for (const region of [undefined, 'EU']) {
      clear(h.simulators.get('eu-1')!, h.simulators.get('eu-2')!);
      const params = {
        model,
        messages: [{ role: 'user' as const, content: unique('EU only') }],
        ...(region && { region }),
      } as ChatCompletionCreateParamsNonStreaming;
      await assert.rejects(
        client.chat.completions.create(params),
        (e: unknown) => e instanceof OpenAI.APIError && e.status === 503 && e.code === 'server_error',
      );
      assert.equal(h.simulators.get('eu-1')!.requests.length, 1);
      assert.equal(h.simulators.get('eu-2')!.requests.length, 1);
    }
    // Streams too.
    const stream = await ask(h.gateway.url, euKey, { stream: true });
    assert.equal(stream.status, 503);
    assert.deepEqual(us.requests, []);
  });

  test('a call with region EU from an unrestricted key stays in the EU as well', async () => {
    const reply = await ask(h.gateway.url, key, { region: 'EU' });
    assert.equal(reply.status, 503);
    assert.equal(reply.body.error.code, 'server_error');
    assert.deepEqual(us.requests, []);
  });

  test('a region without a supplier, or outside the key, is 403 provider_redirect_forbidden', async () => {
    const nowhere = await ask(h.gateway.url, key, { region: 'APAC' });
    assert.equal(nowhere.status, 403);
    assert.equal(nowhere.body.error.code, 'provider_redirect_forbidden');
    const outside = await ask(h.gateway.url, euKey, { region: 'US' });
    assert.equal(outside.status, 403);
    assert.equal(outside.body.error.code, 'provider_redirect_forbidden');
    const euKeyElsewhere = await h.createKey({ allowedRegions: ['APAC'] });
    const none = await ask(h.gateway.url, euKeyElsewhere);
    assert.equal(none.status, 403);
    assert.equal(none.body.error.code, 'provider_redirect_forbidden');
    assert.deepEqual(us.requests, []);
  });
});

describe('streams: failover before the first byte, none after it', () => {
  let h: GatewayHarness;
  let key: string;
  let client: OpenAI;

  beforeAll(async () => {
    h = await harness(
      [
        // EU: openai-protocol primary, anthropic-protocol secondary; US: the other way round.
        { name: 'oa-primary', region: 'EU', priority: 1, protocol: 'openai' },
        { name: 'an-secondary', region: 'EU', priority: 2, protocol: 'anthropic' },
        { name: 'an-primary', region: 'US', priority: 1, protocol: 'anthropic' },
        { name: 'oa-secondary', region: 'US', priority: 2, protocol: 'openai' },
      ],
      { settings: noCircuit },
    );
    key = await h.createKey();
    client = new OpenAI({ baseURL: `${h.gateway.url}/v1`, apiKey: key, maxRetries: 0 });
  });
  afterAll(() => h.close());

  for (const [region, primaryName, secondaryName] of [
    ['EU', 'oa-primary', 'an-secondary'],
    ['US', 'an-primary', 'oa-secondary'],
  ] as const) {
    test(`${primaryName} (${region}) 503 before the first byte → full stream from ${secondaryName}, x-svc-failover: true`, async () => {
      const primary = h.simulators.get(primaryName)!;
      primary.setFaults({ status: 503 });
      try {
        const prompt = unique('Please stream the answer about failover');
        const params = {
          model,
          region,
          stream: true,
          messages: [{ role: 'user', content: prompt }],
        } as ChatCompletionCreateParamsStreaming;
        const { data: stream, response } = await client.chat.completions.create(params).withResponse();
        assert.equal(response.headers.get('x-svc-supplier'), secondaryName);
        assert.equal(response.headers.get('x-svc-region'), region);
        assert.equal(response.headers.get('x-svc-failover'), 'true');
        let text = '';
        let finish: string | null | undefined;
        for await (const chunk of stream) {
          text += chunk.choices[0]?.delta.content ?? '';
          finish = chunk.choices[0]?.finish_reason ?? finish;
        }
        assert.equal(text, replyText(prompt));
        assert.equal(finish, 'stop');
      } finally {
        primary.setFaults(undefined);
      }
    });
  }

  test('a primary that sends 200 headers and dies before any event is failed over too', async () => {
    const primary = h.simulators.get('oa-primary')!;
    primary.setFaults({ cutAfterEvents: 0 });
    try {
      const prompt = unique('headers then nothing');
      const res = await fetch(`${h.gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model, region: 'EU', stream: true, messages: [{ role: 'user', content: prompt }] }),
      });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('x-svc-supplier'), 'an-secondary');
      assert.equal(res.headers.get('x-svc-failover'), 'true');
      const body = await res.text();
      assert.ok(body.includes('[DONE]'));
      assert.ok(!body.includes('"error"'), body);
    } finally {
      primary.setFaults(undefined);
    }
  });

  test('a stream cut mid-way ends with stream_interrupted and is not retried elsewhere', async () => {
    const primary = h.simulators.get('oa-primary')!;
    const secondary = h.simulators.get('an-secondary')!;
    primary.setFaults({ cutAfterEvents: 3 });
    clear(primary, secondary);
    try {
      const res = await fetch(`${h.gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model,
          region: 'EU',
          stream: true,
          messages: [{ role: 'user', content: unique('cut me off after three events please') }],
        }),
      });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('x-svc-supplier'), 'oa-primary');
      assert.equal(res.headers.get('x-svc-failover'), 'false');
      const frames = sseData(await res.text());
      assert.ok(!frames.includes('[DONE]'), 'no clean end');
      const last = JSON.parse(frames.at(-1)!) as { error?: { code: string } };
      assert.equal(last.error?.code, 'stream_interrupted');
      const content = frames.slice(0, -1).map((f) => JSON.parse(f) as { choices: { delta: { content?: string } }[] });
      assert.ok(content.length >= 1 && content.length <= 3, `${content.length} events before the error`);

      // Through the SDK: iteration throws the in-stream error.
      const stream = await client.chat.completions.create({
        model,
        region: 'EU',
        stream: true,
        messages: [{ role: 'user', content: unique('cut me again') }],
      } as ChatCompletionCreateParamsStreaming);
      await assert.rejects(
        (async () => {
          for await (const _chunk of stream) {
            // drain
          }
        })(),
        (e: unknown) => e instanceof OpenAI.APIError && /stream_interrupted/.test(e.message),
      );
      assert.equal(primary.requests.length, 2);
      assert.equal(secondary.requests.length, 0, 'the secondary got no request');
    } finally {
      primary.setFaults(undefined);
    }
  });
});

describe('session affinity', () => {
  let h: GatewayHarness;
  let key: string;
  const names = ['twin-a', 'twin-b'];

  beforeAll(async () => {
    h = await harness(
      [
        { name: 'twin-a', region: 'EU', priority: 1, weight: 1 },
        { name: 'twin-b', region: 'EU', priority: 1, weight: 1 },
      ],
      { settings: noCircuit },
    );
    key = await h.createKey();
  });
  afterAll(() => h.close());

  /** 20 requests stay on one supplier; it fails (503) once, the session moves and sticks for 10 more. */
  async function sticksAndMoves(send: () => Promise<JsonReply>): Promise<void> {
    const first = answeredBy(await send());
    for (let i = 0; i < 19; i++) assert.equal(answeredBy(await send()), first, `request ${i + 2} of the session`);

    const sim = h.simulators.get(first)!;
    const other = names.find((n) => n !== first)!;
    sim.setFaults({ status: 503 });
    const moved = await send();
    assert.equal(answeredBy(moved), other);
    assert.equal(moved.headers.get('x-svc-failover'), 'true');
    sim.setFaults(undefined); // healthy again: only the pin keeps the session away from it
    for (let i = 0; i < 10; i++) {
      const reply = await send();
      assert.equal(answeredBy(reply), other, `request ${i + 1} after the move`);
      assert.equal(reply.headers.get('x-svc-failover'), 'false');
    }
  }

  test('X-Session-Id keeps a session on one supplier, which moves and sticks after a failure', async () => {
    const session = `sess-${randomUUID()}`;
    await sticksAndMoves(() => ask(h.gateway.url, key, {}, { 'x-session-id': session }));
  });

  test('metadata.session_id does the same', async () => {
    const session = `meta-${randomUUID()}`;
    await sticksAndMoves(() => ask(h.gateway.url, key, { metadata: { session_id: session } }));
  });

  test('metadata.sticky_key does the same', async () => {
    const sticky = `sticky-${randomUUID()}`;
    await sticksAndMoves(() => ask(h.gateway.url, key, { metadata: { sticky_key: sticky } }));
  });

  test('a session identifier is at most 512 characters, wherever it is read (it is stored with each audit row)', async () => {
    const long = 's'.repeat(513);
    const refused = (reply: JsonReply, param: string) => {
      assert.equal(reply.status, 400, JSON.stringify(reply.body));
      assert.deepEqual(
        [(reply.body as { error: { code: string; param: string } }).error.code, (reply.body as { error: { param: string } }).error.param],
        ['validation_error', param],
      );
    };
    refused(await ask(h.gateway.url, key, {}, { 'x-session-id': long }), 'x-session-id');
    refused(await ask(h.gateway.url, key, { metadata: { session_id: long } }), 'metadata.session_id');
    const messages = await fetch(`${h.gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model, max_tokens: 5, messages: [{ role: 'user', content: 'hi' }], metadata: { sticky_key: long } }),
    });
    assert.equal(messages.status, 400);
    assert.match(await messages.text(), /metadata\.sticky_key/);
    answeredBy(await ask(h.gateway.url, key, {}, { 'x-session-id': long.slice(1) }));
  });

  test('without identifiers, the same system prompt + first user message lands on the same supplier', async () => {
    const system = unique('You are a careful assistant');
    const opening = unique('Help me plan a trip');
    const seen = new Set<string>();
    for (let i = 0; i < 10; i++) {
      const messages = [
        { role: 'system', content: system },
        { role: 'user', content: opening },
        ...(i > 0
          ? [
              { role: 'assistant', content: `answer ${i}` },
              { role: 'user', content: unique('and then?') },
            ]
          : []),
      ];
      seen.add(answeredBy(await chat(h.gateway.url, key, { messages })));
    }
    assert.equal(seen.size, 1, `one supplier for the conversation, saw ${[...seen].join(', ')}`);
  });
});

describe('the circuit breaker is shared by gateway replicas through the store', () => {
  let h: GatewayHarness;
  let key: string;
  let replicaB: { url: string; metricsUrl: string | undefined };

  beforeAll(async () => {
    h = await harness(
      [
        { name: 'shared-1', region: 'EU', priority: 1 },
        { name: 'shared-2', region: 'EU', priority: 2 },
        { name: 'other-1', region: 'EU', priority: 1, models: [{ id: 'other-model' }] },
        { name: 'other-2', region: 'EU', priority: 2, models: [{ id: 'other-model' }] },
      ],
      { settings: { SVC_CIRCUIT_FAILURES: '2' }, metrics: true },
    );
    key = await h.createKey();
    replicaB = await h.startReplica();
  });
  afterAll(() => h?.close());

  test('tripped through replica A, replica B (and a replica started later) skip the supplier', async () => {
    const tripped = h.simulators.get('shared-1')!;
    tripped.setFaults({ status: 503 });
    const A = h.gateway.url;
    // Failing requests through A until A itself stops sending to the supplier.
    for (let i = 0; i < 2; i++) {
      const reply = await ask(A, key);
      assert.equal(answeredBy(reply), 'shared-2');
      assert.equal(reply.headers.get('x-svc-failover'), 'true');
    }
    assert.equal(tripped.requests.length, 2);
    await circuitReported(h.gateway, 'shared-1', true); // recorded after the answers went out
    const onA = await ask(A, key);
    assert.equal(answeredBy(onA), 'shared-2');
    assert.equal(onA.headers.get('x-svc-failover'), 'true', 'the preferred supplier was skipped (open circuit)');
    assert.equal(tripped.requests.length, 2, 'A opened the circuit after 2 failures');

    await circuitReported(replicaB, 'shared-1', true); // the opening is published to the other replicas
    for (let i = 0; i < 5; i++) {
      const reply = await ask(replicaB.url, key);
      assert.equal(answeredBy(reply), 'shared-2');
      assert.equal(reply.headers.get('x-svc-failover'), 'true');
    }
    assert.equal(tripped.requests.length, 2, 'B sent nothing to the tripped supplier');

    const replicaC = await h.startReplica();
    assert.equal(answeredBy(await ask(replicaC.url, key)), 'shared-2');
    assert.equal(tripped.requests.length, 2, 'a replica started later loads the open circuit');
  });

  test('failures seen by different replicas add up', async () => {
    const sim = h.simulators.get('other-1')!;
    sim.setFaults({ status: 503 });
    assert.equal(answeredBy(await ask(h.gateway.url, key, { model: 'other-model' })), 'other-2');
    assert.equal(answeredBy(await ask(replicaB.url, key, { model: 'other-model' })), 'other-2');
    assert.equal(sim.requests.length, 2);
    // Whichever replica counted the second failure opened the circuit and told the other.
    await circuitReported(h.gateway, 'other-1', true);
    await circuitReported(replicaB, 'other-1', true);
    for (const url of [h.gateway.url, replicaB.url, h.gateway.url, replicaB.url]) {
      assert.equal(answeredBy(await ask(url, key, { model: 'other-model' })), 'other-2');
    }
    assert.equal(sim.requests.length, 2, 'one failure on A + one on B reached the threshold of 2');
  });
});

describe('a client that disconnects aborts the supplier request', () => {
  let h: GatewayHarness;
  let fake: FakeSupplier;
  // slow-eu's timeouts are far beyond any test's ceiling: when its socket closes, the client's
  // disconnect closed it.
  const neverMs = 600_000;

  beforeAll(async () => {
    fake = await startFakeSupplier((_req, res, body) => {
      if (body.stream !== true) {
        if (JSON.stringify(body.messages).includes('never answered')) return;
        const completion = {
          id: 'chatcmpl-fake',
          object: 'chat.completion',
          created: 0,
          model,
          choices: [{ index: 0, message: { role: 'assistant', content: 'fake answer' }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
        };
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(completion));
        return;
      }
      // A stream that sends a chunk at once, then one every 50 ms, forever.
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      let i = 0;
      const drip = () => {
        const chunk = {
          id: 'chatcmpl-fake',
          object: 'chat.completion.chunk',
          created: 0,
          model,
          choices: [{ index: 0, delta: { content: `w${i++} ` }, finish_reason: null }],
        };
        res.write(`data: ${JSON.stringify(chunk)}\n\n`);
      };
      drip();
      const timer = setInterval(drip, 50);
      res.on('close', () => clearInterval(timer));
    });
    h = await harness(
      [
        { name: 'slow-eu', region: 'EU', priority: 1, baseUrl: fake.url, first_byte_timeout_ms: neverMs, timeout_ms: neverMs },
        { name: 'backup-eu', region: 'EU', priority: 2 },
        // The same fake supplier with a short whole-call deadline.
        // Priorities 3 and 4: only calls with region US reach them.
        { name: 'deadline-us', region: 'US', priority: 3, baseUrl: fake.url, timeout_ms: 600 },
        { name: 'backup-us', region: 'US', priority: 4 },
      ],
      // A low threshold, so a client disconnect wrongly counted as a supplier failure shows.
      { settings: { SVC_CIRCUIT_FAILURES: '2' } },
    );
  });
  afterAll(async () => {
    await h?.close();
    await fake?.close();
  });

  /** Waits until the fake supplier saw `count` of its requests' sockets close. */
  const suppliersClosed = (count: number) => waitFor(`${count} supplier requests closed`, () => fake.closedAt.length >= count);

  /** A stream through the gateway that the client leaves after its first chunk; the supplier that served it. */
  async function leaveMidStream(key: string, text: string): Promise<string | null> {
    const controller = new AbortController();
    const res = await fetch(`${h.gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, stream: true, messages: [{ role: 'user', content: unique(text) }] }),
      signal: controller.signal,
    });
    assert.equal(res.status, 200);
    const { value } = await res.body!.getReader().read();
    assert.match(new TextDecoder().decode(value), /w0/);
    controller.abort();
    return res.headers.get('x-svc-supplier');
  }

  test('waiting for the first byte: aborting the client fetch closes the supplier socket, no failover', async () => {
    const { id, secret } = await h.createKeyWithId();
    const controller = new AbortController();
    const pending = fetch(`${h.gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: unique('never answered') }] }),
      signal: controller.signal,
    });
    await waitFor('the supplier to get the request', () => fake.requests.length === 1);
    assert.equal(fake.closedAt.length, 0);
    controller.abort();
    await assert.rejects(pending);
    await suppliersClosed(1); // no timeout of slow-eu can do it: the disconnect did
    // The request's audit record is written once its attempts are over: one attempt, no failover.
    const [record] = await auditRecords(h, id, 1);
    assert.deepEqual(
      record!.attempts.map((a) => a.supplier),
      ['slow-eu'],
    );
    assert.equal(h.simulators.get('backup-eu')!.requests.length, 0, 'no failover for a cancelled request');
  });

  test('mid-stream: aborting the client closes the supplier stream', async () => {
    const key = await h.createKey();
    const closedBefore = fake.closedAt.length;
    assert.equal(await leaveMidStream(key, 'drip'), 'slow-eu');
    await suppliersClosed(closedBefore + 1); // no timeout of slow-eu can do it: the disconnect did
  });

  test('client disconnects are not supplier failures: the circuit stays closed', async () => {
    const { id, secret } = await h.createKeyWithId();
    // Two more mid-stream disconnects (three in all, threshold 2), each after real output.
    for (let i = 0; i < 2; i++) {
      const supplier = await leaveMidStream(secret, 'drip and leave');
      await suppliersClosed(fake.requests.length);
      assert.equal(
        supplier,
        'slow-eu',
        `disconnect ${i + 2}: a healthy supplier whose clients hung up mid-stream must keep its circuit closed (the stream went to the backup)`,
      );
    }
    // Their audit records are written after any health update of theirs was made.
    await auditRecords(h, id, 2);
    const reply = await ask(h.gateway.url, secret);
    assert.equal(
      answeredBy(reply),
      'slow-eu',
      'a healthy supplier whose clients hung up mid-stream must not have its circuit opened (the request went to the backup)',
    );
    assert.equal(reply.headers.get('x-svc-failover'), 'false');
  });

  test('the whole-call deadline (timeout_ms 600): a silent supplier fails over, a stream past it ends with provider_timeout', async () => {
    const key = await h.createKey();
    let started = performance.now();
    const silent = await ask(h.gateway.url, key, { region: 'US', messages: [{ role: 'user', content: unique('never answered') }] });
    let elapsed = performance.now() - started;
    assert.equal(answeredBy(silent), 'backup-us');
    assert.equal(silent.headers.get('x-svc-failover'), 'true');
    // Not before the deadline — within libuv's timer slack: a timer counts from the event loop's
    // cached time, which on a loaded machine lags the real clock by the iteration's length (seen:
    // 571 ms in a CI run on a Redis Cluster). A failover that did not wait would take milliseconds.
    assert.ok(elapsed >= 600 - 100, `failed over after ${elapsed.toFixed(0)} ms, not before the deadline`);

    started = performance.now();
    const res = await fetch(`${h.gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, region: 'US', stream: true, messages: [{ role: 'user', content: unique('drip past the deadline') }] }),
    });
    assert.equal(res.headers.get('x-svc-supplier'), 'deadline-us');
    const frames = sseData(await res.text());
    elapsed = performance.now() - started;
    const last = JSON.parse(frames.at(-1)!) as { error?: { code: string } };
    assert.equal(last.error?.code, 'provider_timeout');
    // The supplier never stops dripping (and never pauses long enough for the between-chunk
    // timeout): only the deadline ends the stream, after the output it let through.
    assert.ok(frames.length >= 2, 'output before the deadline reached the client');
    assert.ok(elapsed >= 600, `stream ended after ${elapsed.toFixed(0)} ms, not before the deadline`);
  });
});

describe('routing headers and trailers', () => {
  const prices = {
    'cheap-eu': { input: 0.15, output: 0.6 },
    'pricey-eu': { input: 1.1, output: 4.4 },
    'claude-us': { input: 3, output: 15 },
  } as const;
  let h: GatewayHarness;
  let key: string;
  const auth = () => ({ authorization: `Bearer ${key}` });

  beforeAll(async () => {
    h = await harness(
      [
        { name: 'cheap-eu', region: 'EU', priority: 1, models: [{ id: model, input_usd_per_mtok: 0.15, output_usd_per_mtok: 0.6 }] },
        { name: 'pricey-eu', region: 'EU', priority: 2, models: [{ id: model, input_usd_per_mtok: 1.1, output_usd_per_mtok: 4.4 }] },
        // Priority 3: only calls with region US reach it.
        {
          name: 'claude-us',
          region: 'US',
          priority: 3,
          protocol: 'anthropic',
          models: [{ id: model, input_usd_per_mtok: 3, output_usd_per_mtok: 15 }],
        },
      ],
      { settings: noCircuit },
    );
    key = await h.createKey();
  });
  afterAll(() => h.close());

  const assertRouting = (headers: Headers | IncomingHttpHeaders, supplier: keyof typeof prices, region: string, failover: boolean) => {
    const get = (name: string) => (headers instanceof Headers ? headers.get(name) : (headers[name] as string | undefined));
    assert.equal(get('x-svc-supplier'), supplier);
    assert.equal(get('x-svc-region'), region);
    assert.equal(get('x-svc-failover'), String(failover));
    assert.match(get('x-svc-latency-ms') ?? '', /^\d+$/);
  };

  test('a JSON answer carries all seven headers; cost = tokens × the answering supplier prices', async () => {
    const reply = await ask(h.gateway.url, key);
    assert.equal(reply.status, 200);
    assertRouting(reply.headers, 'cheap-eu', 'EU', false);
    const usage = reply.body.usage as { prompt_tokens: number; completion_tokens: number };
    assert.equal(reply.headers.get('x-svc-input-tokens'), String(usage.prompt_tokens));
    assert.equal(reply.headers.get('x-svc-output-tokens'), String(usage.completion_tokens));
    assertCost(reply.headers.get('x-svc-cost-usd'), usage.prompt_tokens, usage.completion_tokens, prices['cheap-eu']);
  });

  test('after a failover the headers name the secondary and the cost uses its prices', async () => {
    h.simulators.get('cheap-eu')!.setFaults({ status: 502, failFirst: 1 });
    const reply = await ask(h.gateway.url, key);
    assertRouting(reply.headers, 'pricey-eu', 'EU', true);
    const usage = reply.body.usage as { prompt_tokens: number; completion_tokens: number };
    assertCost(reply.headers.get('x-svc-cost-usd'), usage.prompt_tokens, usage.completion_tokens, prices['pricey-eu']);
  });

  test('an anthropic-protocol supplier answer (OpenAI client) carries them too', async () => {
    const reply = await ask(h.gateway.url, key, { region: 'US' });
    assertRouting(reply.headers, 'claude-us', 'US', false);
    const usage = reply.body.usage as { prompt_tokens: number; completion_tokens: number };
    assert.equal(reply.headers.get('x-svc-input-tokens'), String(usage.prompt_tokens));
    assert.equal(reply.headers.get('x-svc-output-tokens'), String(usage.completion_tokens));
    assertCost(reply.headers.get('x-svc-cost-usd'), usage.prompt_tokens, usage.completion_tokens, prices['claude-us']);
  });

  for (const includeUsage of [true, false]) {
    test(`a stream (include_usage: ${includeUsage}) has the first four as headers and tokens/cost as trailers`, async () => {
      const body = {
        model,
        stream: true,
        ...(includeUsage && { stream_options: { include_usage: true } }),
        messages: [{ role: 'user', content: unique('stream with trailers') }],
      };
      const reply = await rawPost(h.gateway.url, '/v1/chat/completions', body, auth());
      assert.equal(reply.status, 200);
      assertRouting(reply.headers, 'cheap-eu', 'EU', false);
      assert.equal(reply.headers['x-svc-cost-usd'], undefined, 'cost is not known before the stream');
      assert.match(reply.headers.trailer ?? '', /x-svc-cost-usd/);
      const input = Number(reply.trailers['x-svc-input-tokens']);
      const output = Number(reply.trailers['x-svc-output-tokens']);
      assert.ok(input > 0 && output > 0, JSON.stringify(reply.trailers));
      assertCost(reply.trailers['x-svc-cost-usd'], input, output, prices['cheap-eu']);
      const chunks = sseData(reply.text)
        .filter((d) => d !== '[DONE]')
        .map((d) => JSON.parse(d) as { usage?: { prompt_tokens: number; completion_tokens: number } });
      const usage = chunks.find((c) => c.usage)?.usage;
      if (includeUsage) {
        assert.deepEqual({ input, output }, { input: usage?.prompt_tokens, output: usage?.completion_tokens });
      } else {
        assert.equal(usage, undefined, 'no usage chunk when the client did not ask for it');
      }
    });
  }

  test('the Anthropic interface: headers on a message, trailers on a stream', async () => {
    const headers = { 'x-api-key': key, 'anthropic-version': '2023-06-01' };
    const message = { model, max_tokens: 200, messages: [{ role: 'user', content: unique('anthropic client') }] };
    const plain = await rawPost(h.gateway.url, '/v1/messages', message, headers);
    assert.equal(plain.status, 200, plain.text);
    assertRouting(plain.headers, 'cheap-eu', 'EU', false);
    const usage = (JSON.parse(plain.text) as { usage: { input_tokens: number; output_tokens: number } }).usage;
    assert.equal(plain.headers['x-svc-input-tokens'], String(usage.input_tokens));
    assert.equal(plain.headers['x-svc-output-tokens'], String(usage.output_tokens));
    assertCost(plain.headers['x-svc-cost-usd'] as string, usage.input_tokens, usage.output_tokens, prices['cheap-eu']);

    const streamed = await rawPost(h.gateway.url, '/v1/messages', { ...message, stream: true, region: 'US' }, headers);
    assert.equal(streamed.status, 200);
    assertRouting(streamed.headers, 'claude-us', 'US', false);
    const input = Number(streamed.trailers['x-svc-input-tokens']);
    const output = Number(streamed.trailers['x-svc-output-tokens']);
    assert.ok(input > 0 && output > 0, JSON.stringify(streamed.trailers));
    assertCost(streamed.trailers['x-svc-cost-usd'], input, output, prices['claude-us']);
  });
});

describe('weights within a priority', () => {
  let h: GatewayHarness;
  let key: string;

  beforeAll(async () => {
    h = await harness(
      [
        { name: 'heavy', region: 'EU', priority: 1, weight: 3 },
        { name: 'light', region: 'EU', priority: 1, weight: 1 },
      ],
      { settings: noCircuit },
    );
    key = await h.createKey();
  });
  afterAll(() => h.close());

  test('3:1 weights send about 75% of 200 unpinned requests to the heavier supplier', async () => {
    const counts = new Map<string, number>();
    const total = 200;
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < total) {
          next++;
          const supplier = answeredBy(await ask(h.gateway.url, key));
          counts.set(supplier, (counts.get(supplier) ?? 0) + 1);
        }
      }),
    );
    const heavy = counts.get('heavy') ?? 0;
    assert.equal(heavy + (counts.get('light') ?? 0), total);
    assert.ok(heavy >= 0.6 * total && heavy <= 0.9 * total, `heavy answered ${heavy} of ${total}`);
  });
});
