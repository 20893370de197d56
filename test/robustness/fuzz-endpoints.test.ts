// Fuzz suite over every endpoint (issue 13): valid requests of each interface, mutated — fields set
// to hostile values or removed, bodies replaced by other JSON, text or deep nesting, wrong methods,
// content types, credentials, query strings and path noise. Whatever arrives, the gateway must
// answer: no 5xx, no hang, no secret in the answer, and every error in the catalogue shape.
// Seeded and bounded: see fuzz-run.ts (SVC_FUZZ_SEED, SVC_FUZZ_CASES, `npm run fuzz`).
import { afterAll, beforeAll, describe, test } from 'vitest';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.js';
import { anyJson, fuzz, fuzzCases, fuzzTimeoutMs, hostileStrings } from './fuzz-run.js';
import { catalogueShapeProblems } from './support.js';
import { silentWav } from '../support/wav.js';

/** Where the fuzzer aims: one valid request per endpoint, which the mutations then break. */
interface Endpoint {
  method: string;
  path: (ids: { victimKeyId: string }) => string;
  /** Who may call it: a tenant key or the admin key. */
  caller: 'tenant' | 'admin';
  /** A valid JSON body, or a multipart form (transcriptions), or none. */
  body?: () => Record<string, unknown>;
  multipart?: boolean;
}

const chatMessages = [{ role: 'user', content: 'hello fuzz' }];
const endpoints: Endpoint[] = [
  {
    method: 'POST',
    path: () => '/v1/chat/completions',
    caller: 'tenant',
    body: () => ({ model: 'gpt-4o-mini', messages: chatMessages, max_tokens: 16 }),
  },
  {
    method: 'POST',
    path: () => '/v1/chat/completions',
    caller: 'tenant',
    body: () => ({ model: 'claude-haiku', messages: chatMessages, stream: true }),
  },
  {
    method: 'POST',
    path: () => '/v1/messages',
    caller: 'tenant',
    body: () => ({ model: 'claude-haiku', max_tokens: 16, messages: chatMessages }),
  },
  {
    method: 'POST',
    path: () => '/v1/messages',
    caller: 'tenant',
    body: () => ({ model: 'gpt-4o-mini', max_tokens: 16, messages: chatMessages, stream: true }),
  },
  {
    method: 'POST',
    path: () => '/v1/messages/count_tokens',
    caller: 'tenant',
    body: () => ({ model: 'gpt-4o-mini', messages: chatMessages }),
  },
  {
    method: 'POST',
    path: () => '/v1/messages/count_tokens',
    caller: 'tenant',
    body: () => ({ model: 'claude-haiku', messages: chatMessages }),
  },
  {
    method: 'POST',
    path: () => '/v1/native/responses',
    caller: 'tenant',
    body: () => ({ model: 'native-responses', input: 'hello fuzz' }),
  },
  {
    method: 'POST',
    path: () => '/v1/native/responses',
    caller: 'tenant',
    body: () => ({ model: 'native-responses', input: 'hello fuzz', stream: true }),
  },
  { method: 'POST', path: () => '/v1/embeddings', caller: 'tenant', body: () => ({ model: 'embed-small', input: ['hello', 'fuzz'] }) },
  {
    method: 'POST',
    path: () => '/v1/rerank',
    caller: 'tenant',
    body: () => ({ model: 'rerank-v1', query: 'fuzz', documents: ['a fuzz', 'b'] }),
  },
  {
    method: 'POST',
    path: () => '/v1/audio/speech',
    caller: 'tenant',
    body: () => ({ model: 'tts-1', input: 'hello fuzz', voice: 'alloy' }),
  },
  {
    method: 'POST',
    path: () => '/v1/audio/transcriptions',
    caller: 'tenant',
    multipart: true,
    body: () => ({ model: 'whisper', response_format: 'json' }),
  },
  { method: 'GET', path: () => '/v1/models', caller: 'tenant' },
  { method: 'GET', path: () => '/v1/models/gpt-4o-mini', caller: 'tenant' },
  { method: 'GET', path: () => '/health', caller: 'tenant' },
  { method: 'GET', path: () => '/v1/manage/keys?limit=5', caller: 'admin' },
  {
    method: 'POST',
    path: () => '/v1/manage/keys',
    caller: 'admin',
    body: () => ({ name: 'fuzz', budget_limit: 5, metadata: { team: 'fuzz' } }),
  },
  { method: 'GET', path: (ids) => `/v1/manage/keys/${ids.victimKeyId}`, caller: 'admin' },
  {
    method: 'PATCH',
    path: (ids) => `/v1/manage/keys/${ids.victimKeyId}`,
    caller: 'admin',
    body: () => ({ name: 'victim', rate_limit_rpm: 100 }),
  },
  { method: 'GET', path: (ids) => `/v1/manage/keys/${ids.victimKeyId}/audit?limit=5`, caller: 'admin' },
  { method: 'GET', path: () => '/v1/manage/wallets/project:fuzz', caller: 'admin' },
  {
    method: 'POST',
    path: () => '/v1/manage/wallets/project:fuzz/credits',
    caller: 'admin',
    body: () => ({ amount_usd: 1, reason: 'fuzz' }),
  },
];

/** A silent mono 16-bit PCM WAV of `samples` samples at 16 kHz. */
const wav = (samples: number): Buffer => silentWav(samples * 2);

/** Field names the endpoints know, so mutations hit real fields as often as unknown ones. */
const fieldNames = [
  'model',
  'messages',
  'max_tokens',
  'stream',
  'input',
  'query',
  'documents',
  'voice',
  'response_format',
  'speed',
  'region',
  'tools',
  'tool_choice',
  'system',
  'metadata',
  'name',
  'budget_limit',
  'rate_limit_rpm',
  'allowed_models',
  'allowed_regions',
  'payer',
  'status',
  'amount_usd',
  'reason',
  'encoding_format',
  'top_n',
  'temperature',
  'n',
  'stop',
  'content',
  'role',
  'stream_options',
  'instructions',
  'previous_response_id',
  'file',
  'language',
  'dimensions',
  'user',
];
const fieldName = fc.oneof(
  { weight: 5, arbitrary: fc.constantFrom(...fieldNames) },
  { weight: 1, arbitrary: fc.string({ maxLength: 12 }) },
  { weight: 1, arbitrary: fc.nat(3).map(String) },
);

type Mutation = { op: 'set'; path: string[]; value: unknown } | { op: 'delete'; path: string[] };
const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({ op: fc.constant('set' as const), path: fc.array(fieldName, { minLength: 1, maxLength: 3 }), value: anyJson }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('delete' as const), path: fc.array(fieldName, { minLength: 1, maxLength: 2 }) }) },
);

/** Sets an own property, whatever its name: `__proto__` becomes a key sent to the gateway, never the prototype. */
function setOwn(record: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(record, key, { value, enumerable: true, writable: true, configurable: true });
}

/**
 * Applies a mutation in place, creating objects along a path that does not exist. Only own
 * properties are followed and written: with a key such as `__proto__` a plain assignment would
 * change Object.prototype in this process (the gateway under test runs here too) instead of
 * producing the hostile body the case means to send.
 */
function mutate(target: Record<string, unknown>, m: Mutation): void {
  let node: unknown = target;
  for (const key of m.path.slice(0, -1)) {
    if (node === null || typeof node !== 'object') return;
    const record = node as Record<string, unknown>;
    const own = Object.hasOwn(record, key) ? record[key] : undefined;
    if (own === null || typeof own !== 'object') setOwn(record, key, {});
    node = Object.getOwnPropertyDescriptor(record, key)!.value;
  }
  if (node === null || typeof node !== 'object') return;
  const last = m.path.at(-1)!;
  if (m.op === 'set') setOwn(node as Record<string, unknown>, last, m.value);
  else if (Object.hasOwn(node, last)) delete (node as Record<string, unknown>)[last];
}

/** The value in about one case out of ten, else null. */
const rarely = <T>(arbitrary: fc.Arbitrary<T>) => fc.oneof({ weight: 9, arbitrary: fc.constant(null) }, { weight: 1, arbitrary });

const fuzzCase = fc.record({
  endpoint: fc.constantFrom(...endpoints),
  mutations: fc.array(mutation, { maxLength: 4 }),
  /** How the body is made: the mutated valid body, or something else entirely. */
  bodyForm: fc.oneof(
    { weight: 10, arbitrary: fc.constant('mutated' as const) },
    { weight: 1, arbitrary: fc.constant('other-json' as const) },
    { weight: 1, arbitrary: fc.constant('text' as const) },
    { weight: 1, arbitrary: fc.constant('truncated' as const) },
    { weight: 1, arbitrary: fc.constant('deep' as const) },
  ),
  otherJson: anyJson,
  text: fc.oneof(fc.string({ unit: 'binary', maxLength: 200 }), fc.constantFrom(...hostileStrings)),
  cut: fc.nat(),
  realAudio: fc.boolean(),
  depth: fc.integer({ min: 100, max: 20_000 }),
  credential: fc.oneof(
    { weight: 12, arbitrary: fc.constant('own' as const) },
    { weight: 1, arbitrary: fc.constantFrom('none', 'malformed', 'wrong', 'tenant-on-admin', 'x-api-key', 'revoked') },
  ),
  method: rarely(fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD')),
  contentType: rarely(
    fc.constantFrom(
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/json; charset=latin1',
      'application/xml',
      '',
    ),
  ),
  pathNoise: rarely(
    fc.constantFrom(
      '/',
      '/%zz',
      '/../x',
      '?',
      ';x',
      '/%00',
      `/${'x'.repeat(600)}`,
      '?limit=-1',
      '?cursor=%%%',
      '?from=-271821-04-20T00:00:00Z',
      '?name_prefix=%00&limit=abc',
    ),
  ),
  headers: fc.array(
    fc.tuple(
      fc.constantFrom(
        'anthropic-version',
        'ext-version',
        'x-svc-session',
        'x-session-id',
        'accept',
        'x-request-id',
        'x-svc-region',
        'content-encoding',
        'x-fuzz',
        'openai-organization',
      ),
      fc.oneof(fc.stringMatching(/^[\x20-\x7e]{0,40}$/), fc.constantFrom('2023-06-01', 'gzip', 'text/event-stream', 'x'.repeat(4_000))),
    ),
    { maxLength: 2 },
  ),
});
type FuzzCase = typeof fuzzCase extends fc.Arbitrary<infer T> ? T : never;

describe('fuzzing every endpoint', () => {
  let h: GatewayHarness;
  let tenantKey: string;
  let revokedKey: string;
  let victimKeyId: string;
  let secrets: string[];

  beforeAll(async () => {
    h = await startGatewayHarness([
      {
        name: 'sim-openai',
        region: 'EU',
        models: [
          { id: 'gpt-4o-mini' },
          { id: 'embed-small', input_usd_per_mtok: 0.02, output_usd_per_mtok: 0, capabilities: ['embeddings'] },
          { id: 'rerank-v1', input_usd_per_mtok: 0.05, capabilities: ['rerank'] },
          { id: 'whisper', upstream: 'whisper-1', usd_per_audio_minute: 0.006, capabilities: ['transcription'] },
          { id: 'tts-1', usd_per_mchar: 15, default_voice: 'alloy', capabilities: ['speech'] },
        ],
      },
      { name: 'sim-anthropic', region: 'US', protocol: 'anthropic', models: [{ id: 'claude-haiku' }, { id: 'gpt-4o-mini' }] },
      { name: 'sim-responses', region: 'EU', protocol: 'openai-responses', models: [{ id: 'native-responses' }] },
    ]);
    tenantKey = await h.createKey();
    const createKey = async (name: string) => {
      const created = await fetch(`${h.gateway.url}/v1/manage/keys`, {
        method: 'POST',
        headers: { authorization: `Bearer ${h.adminKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name }),
      });
      return (await created.json()) as { id: string; key: string };
    };
    // The key admin mutations aim at, and a revoked key the tenant requests may present.
    const victim = await createKey('victim');
    victimKeyId = victim.id;
    const revoked = await createKey('revoked');
    revokedKey = revoked.key;
    const revoke = await fetch(`${h.gateway.url}/v1/manage/keys/${revoked.id}/revoke`, {
      method: 'POST',
      headers: { authorization: `Bearer ${h.adminKey}` },
    });
    assert.equal(revoke.status, 200);
    secrets = [h.adminKey, h.pepper, tenantKey, revokedKey, victim.key];
  });
  afterAll(async () => {
    await h?.close();
  });

  function credentialHeaders(c: FuzzCase): Record<string, string> {
    const own = c.endpoint.caller === 'admin' ? h.adminKey : tenantKey;
    switch (c.credential) {
      case 'own':
        return { authorization: `Bearer ${own}` };
      case 'none':
        return {};
      case 'malformed':
        return { authorization: 'Bearer' };
      case 'wrong':
        return { authorization: `Bearer ${own.slice(0, -4)}abcd` };
      case 'tenant-on-admin':
        return { authorization: `Bearer ${tenantKey}` };
      case 'x-api-key':
        return { 'x-api-key': own };
      case 'revoked':
        return { authorization: `Bearer ${revokedKey}` };
    }
  }

  /** The body and its content type for a case. */
  function bodyOf(c: FuzzCase): { body?: string | FormData; contentType?: string } {
    const valid = c.endpoint.body?.();
    if (valid === undefined && c.bodyForm === 'mutated') return {};
    // A copy: the valid bodies share their message lists, which mutations must not change.
    const mutated = structuredClone(valid ?? {});
    for (const m of c.mutations) mutate(mutated, m);
    if (c.endpoint.multipart && c.bodyForm === 'mutated') {
      const form = new FormData();
      for (const [name, value] of Object.entries(mutated))
        form.append(name, typeof value === 'string' ? value : (JSON.stringify(value) ?? ''));
      form.append('file', new Blob([c.realAudio ? wav(c.cut % 2_000) : Buffer.from(c.text)], { type: 'audio/wav' }), 'a.wav');
      return { body: form };
    }
    const json = (value: unknown) => JSON.stringify(value) ?? 'null';
    switch (c.bodyForm) {
      case 'mutated':
        return { body: json(mutated), contentType: 'application/json' };
      case 'other-json':
        return { body: json(c.otherJson), contentType: 'application/json' };
      case 'text':
        return { body: c.text, contentType: 'application/json' };
      case 'truncated': {
        const text = json(mutated);
        return { body: text.slice(0, c.cut % Math.max(1, text.length)), contentType: 'application/json' };
      }
      case 'deep':
        return { body: `{"model":"gpt-4o-mini","x":${'['.repeat(c.depth)}${']'.repeat(c.depth)}}`, contentType: 'application/json' };
    }
  }

  const cases = fuzzCases(1_500, 0.6);
  test(
    `${cases} mutated requests: no 5xx, no hang, no secret, every error in the catalogue shape`,
    async () => {
      await fuzz('endpoint fuzz', fuzzCase, cases, async (c) => {
        const method = c.method ?? c.endpoint.method;
        const { body, contentType } = bodyOf(c);
        const withBody = body !== undefined && method !== 'GET' && method !== 'HEAD';
        const headers: Record<string, string> = { ...Object.fromEntries(c.headers), ...credentialHeaders(c) };
        if (withBody && contentType !== undefined) headers['content-type'] = c.contentType ?? contentType;
        const path = c.endpoint.path({ victimKeyId }) + (c.pathNoise ?? '');
        let response: Response;
        try {
          response = await fetch(`${h.gateway.url}${path}`, {
            method,
            headers,
            ...(withBody && { body }),
            signal: AbortSignal.timeout(20_000),
          });
        } catch (error) {
          // fetch refusing to send (a header value it will not encode) is the client, not the gateway.
          if (error instanceof TypeError && !(error.cause instanceof Error && 'code' in error.cause)) return;
          throw new Error(`${method} ${path.slice(0, 200)}: no answer (${String(error)})`, { cause: error });
        }
        const text = await response.text();
        const context = `${method} ${path.slice(0, 200)} → ${response.status} ${text.slice(0, 300)}`;
        assert.ok(response.status < 500, `5xx: ${context}`);
        const everything = `${text}\n${[...response.headers].map(([k, v]) => `${k}: ${v}`).join('\n')}`;
        for (const secret of secrets) assert.ok(!everything.includes(secret), `a secret in the answer: ${context}`);
        if (response.status >= 400 && method !== 'HEAD') {
          assert.deepEqual(catalogueShapeProblems(response.status, text, response.headers.get('content-type') ?? undefined), [], context);
        }
      });
    },
    fuzzTimeoutMs(cases),
  );

  test('the gateway still serves after the fuzzing', async () => {
    const health = await fetch(`${h.gateway.url}/health`);
    assert.equal(health.status, 200);
    const chat = await fetch(`${h.gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenantKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: chatMessages }),
    });
    assert.equal(chat.status, 200, await chat.text());
  });
});
