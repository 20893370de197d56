import { afterAll, beforeAll, describe, test } from 'vitest';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.js';

interface ErrorReply {
  status: number;
  headers: Headers;
  body: {
    type: string;
    error: { code: string; type: string; message: string; human_message: string; param: string | null; request_id: string };
  };
}

describe('gateway foundation through the OpenAI SDK and plain HTTP', () => {
  let h: GatewayHarness;
  let key: string;
  let client: OpenAI;

  const post = async (path: string, body: string, headers: Record<string, string> = {}): Promise<ErrorReply> => {
    const res = await fetch(`${h.gateway.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
      body,
    });
    return { status: res.status, headers: res.headers, body: (await res.json()) as ErrorReply['body'] };
  };
  const chat = (body: unknown, headers?: Record<string, string>) => post('/v1/chat/completions', JSON.stringify(body), headers);
  const expectError = (reply: ErrorReply, status: number, code: string, param?: string) => {
    assert.equal(reply.status, status, JSON.stringify(reply.body));
    assert.equal(reply.body.error.code, code);
    assert.equal(reply.body.error.message, `${code} - ${reply.body.error.human_message}`);
    assert.ok(reply.body.error.human_message.length > 0);
    assert.match(reply.body.error.request_id, /^req_/);
    assert.equal(reply.headers.get('x-request-id'), reply.body.error.request_id);
    if (param !== undefined) assert.equal(reply.body.error.param, param);
  };

  beforeAll(async () => {
    h = await startGatewayHarness([
      { name: 'sim-eu', region: 'EU', models: [{ id: 'gpt-4o-mini', upstream: 'gpt-4o-mini-2024-07-18' }, { id: 'other-model' }] },
    ]);
    key = await h.createKey();
    client = new OpenAI({ baseURL: `${h.gateway.url}/v1`, apiKey: key, maxRetries: 0 });
  });
  afterAll(async () => {
    await h.close();
  });

  test('GET /health answers without a key', async () => {
    const res = await fetch(`${h.gateway.url}/health`);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { status: 'ok' });
  });

  test('models.list() lists the catalogue models', async () => {
    const ids = [];
    for await (const model of client.models.list()) {
      assert.equal(model.object, 'model');
      if (model.id !== 'auto') assert.equal(model.owned_by, 'ext');
      ids.push(model.id);
    }
    assert.deepEqual(ids.sort(), ['auto', 'gpt-4o-mini', 'other-model']);
  });

  test('a key with an allow-list sees and may call only its models', async () => {
    const limited = await h.createKey({ allowedModels: ['other-model'] });
    const limitedClient = new OpenAI({ baseURL: `${h.gateway.url}/v1`, apiKey: limited, maxRetries: 0 });
    const page = await limitedClient.models.list();
    assert.deepEqual(
      page.data.map((m) => m.id),
      ['auto', 'other-model'],
    );
    await assert.rejects(
      limitedClient.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
      (e: unknown) => e instanceof OpenAI.PermissionDeniedError && e.code === 'model_not_allowed',
    );
  });

  test('chat completion through the simulator, with routing headers and the upstream model id', async () => {
    const { data, response } = await client.chat.completions
      .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say hello to the gateway' }], temperature: 0.5 })
      .withResponse();
    assert.equal(data.object, 'chat.completion');
    assert.equal(data.model, 'gpt-4o-mini');
    assert.equal(data.choices[0]!.message.role, 'assistant');
    assert.ok((data.choices[0]!.message.content ?? '').length > 0);
    assert.equal(data.usage!.total_tokens, data.usage!.prompt_tokens + data.usage!.completion_tokens);
    assert.equal(response.headers.get('x-svc-supplier'), 'sim-eu');
    assert.equal(response.headers.get('x-svc-region'), 'EU');
    assert.equal(response.headers.get('x-svc-failover'), 'false');
    assert.equal(response.headers.get('x-svc-input-tokens'), String(data.usage!.prompt_tokens));
    assert.equal(response.headers.get('x-svc-output-tokens'), String(data.usage!.completion_tokens));
    const expectedCost = (data.usage!.prompt_tokens * 0.15 + data.usage!.completion_tokens * 0.6) / 1e6;
    assert.ok(Math.abs(Number(response.headers.get('x-svc-cost-usd')) - expectedCost) < 1e-12);
    assert.match(response.headers.get('x-svc-latency-ms') ?? '', /^\d+$/);
    const seen = h.simulators.get('sim-eu')!.requests.at(-1)!;
    assert.equal((seen.body as { model: string }).model, 'gpt-4o-mini-2024-07-18');
    assert.equal((seen.body as { region?: string }).region, undefined);
  });

  test('streaming passes the supplier SSE through to the SDK', async () => {
    const stream = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'stream please' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      usage = chunk.usage ?? usage;
    }
    assert.ok(text.length > 0);
    assert.ok(usage && usage.completion_tokens > 0);
  });

  test('missing, malformed and wrong keys are refused with catalogue codes', async () => {
    expectError(await post('/v1/chat/completions', '{}', { authorization: '' }), 401, 'missing_api_key');
    expectError(await post('/v1/chat/completions', '{}', { authorization: 'Basic abc' }), 401, 'invalid_api_key');
    expectError(await post('/v1/chat/completions', '{}', { authorization: 'Bearer svc-sk-not-a-real-key' }), 401, 'invalid_api_key');
    expectError(await post('/v1/chat/completions', '{}', { authorization: 'Bearer sk-proj-openai' }), 401, 'invalid_api_key');
    const res = await fetch(`${h.gateway.url}/v1/models`);
    assert.equal(res.status, 401);
    await assert.rejects(
      new OpenAI({ baseURL: `${h.gateway.url}/v1`, apiKey: 'svc-sk-wrong', maxRetries: 0 }).models.list(),
      (e: unknown) => e instanceof OpenAI.AuthenticationError && e.code === 'invalid_api_key',
    );
  });

  test('the admin key does not call models', async () => {
    expectError(
      await chat({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] }, { authorization: `Bearer ${h.adminKey}` }),
      403,
      'permission_denied',
    );
  });

  test('a body declared other than JSON in UTF-8 is 415 unsupported_media_type naming what was sent and what is accepted; an undeclared one is read as JSON', async () => {
    const valid = '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"x"}]}';
    // curl -d sends form encoding by default; text/plain is fetch's default for a string body.
    for (const [contentType, named] of [
      ['text/plain', '"text/plain" is not JSON'],
      ['application/x-www-form-urlencoded', '"application/x-www-form-urlencoded" is not JSON'],
      ['application/json; charset=utf-16', 'charset other than UTF-8'],
      ['application/json; charset=ISO-8859-1', 'charset other than UTF-8'],
      ['application/xml', '"application/xml" is not JSON'],
      ['json', '"json" is not a valid media type'], // fastify's own 415, in the catalogue shape
      // Parameters that are not name=value (outside probe: all four were read as JSON).
      ['application/json; charset', 'is not a valid media type'],
      ['application/json; =utf-8', 'is not a valid media type'],
      ['application/json; foo', 'is not a valid media type'],
      ['application/json; charset=utf-8; boundary', 'is not a valid media type'],
      ['application/json; charset=', 'is not a valid media type'],
    ] as const) {
      const reply = await post('/v1/chat/completions', valid, { 'content-type': contentType });
      expectError(reply, 415, 'unsupported_media_type', 'content-type');
      const message = String(reply.body.error.human_message);
      assert.ok(message.includes(named), `${contentType}: ${message}`);
      assert.ok(message.includes('application/json'), `${contentType}: ${message}`);
    }
    // A body without any Content-Type (a Buffer: fetch adds none) declares nothing: read as JSON.
    const untyped = await fetch(`${h.gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: Buffer.from(valid),
    });
    assert.equal(untyped.status, 200, await untyped.clone().text());
  });

  test('broken JSON, wrong shapes and wrong types get catalogue errors naming the field', async () => {
    expectError(await post('/v1/chat/completions', '{"model": "gpt-4o-mini", '), 400, 'invalid_json');
    expectError(await post('/v1/chat/completions', ''), 400, 'invalid_json');
    expectError(await post('/v1/chat/completions', '[1,2]'), 400, 'invalid_request');
    // Broken JSON is invalid_json under any JSON Content-Type.
    for (const contentType of ['application/json; charset=utf-8', 'Application/JSON', 'application/json; charset="UTF-8"']) {
      expectError(await post('/v1/chat/completions', '{"model": ', { 'content-type': contentType }), 400, 'invalid_json');
    }
    const valid = '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"x"}]}';
    for (const contentType of [
      'application/json; charset=UTF-8',
      'application/vnd.api+json',
      'application/json; foo=bar',
      'application/json;',
      'application/json; charset="utf-8"; q="a\\"b"',
    ]) {
      assert.equal((await post('/v1/chat/completions', valid, { 'content-type': contentType })).status, 200, contentType);
    }
    expectError(await chat({ messages: [{ role: 'user', content: 'x' }] }), 400, 'missing_model', 'model');
    expectError(await chat({ model: 'gpt-4o-mini' }), 400, 'missing_fields', 'messages');
    expectError(await chat({ model: 42, messages: [] }), 400, 'validation_error', 'model');
    expectError(await chat({ model: 'gpt-4o-mini', messages: [] }), 400, 'validation_error', 'messages');
    expectError(
      await chat({ model: 'gpt-4o-mini', messages: [{ role: 'wizard', content: 'x' }] }),
      400,
      'validation_error',
      'messages[0].role',
    );
    expectError(
      await chat({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], temperature: 'hot' }),
      400,
      'validation_error',
      'temperature',
    );
    expectError(
      await chat({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], temperature: 2.5 }),
      400,
      'validation_error',
      'temperature',
    );
    expectError(
      await chat({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], top_p: 1.5 }),
      400,
      'validation_error',
      'top_p',
    );
    expectError(
      await chat({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], max_tokens: -1 }),
      400,
      'validation_error',
      'max_tokens',
    );
    expectError(
      await chat({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], stream: 'yes' }),
      400,
      'validation_error',
      'stream',
    );
  });

  test('unknown models, routes and regions fail clearly, never reaching a supplier outside the region', async () => {
    expectError(await chat({ model: 'gpt-9', messages: [{ role: 'user', content: 'x' }] }), 404, 'model_not_found', 'model');
    const before = h.simulators.get('sim-eu')!.requests.length;
    expectError(
      await chat({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], region: 'US' }),
      403,
      'provider_redirect_forbidden',
      'region',
    );
    assert.equal(h.simulators.get('sim-eu')!.requests.length, before, 'no supplier call for a region with no supplier');
    const ok = await chat({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], region: 'EU' });
    assert.equal(ok.status, 200);
    const usOnly = await h.createKey({ allowedRegions: ['US'] });
    expectError(
      await chat({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] }, { authorization: `Bearer ${usOnly}` }),
      403,
      'provider_redirect_forbidden',
    );
    const res = await fetch(`${h.gateway.url}/v1/nothing-here`, { headers: { authorization: `Bearer ${key}` } });
    assert.equal(res.status, 404);
    assert.equal(((await res.json()) as ErrorReply['body']).error.code, 'not_found');
  });

  test('a body over the limit is refused with request_too_large', async () => {
    const huge = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x'.repeat(11 * 1024 * 1024) }] });
    expectError(await post('/v1/chat/completions', huge), 413, 'request_too_large');
  });

  test('supplier failures keep their status and code; timeouts and refusals are classified', async () => {
    const sim = h.simulators.get('sim-eu')!;
    const msg = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] };
    sim.setFaults({ status: 429, retryAfterSeconds: 7 });
    const r429 = await chat(msg);
    assert.equal(r429.status, 429);
    assert.equal(r429.headers.get('retry-after'), '7');
    assert.ok(r429.body.error.code.length > 0);
    sim.setFaults({ status: 503 });
    const r503 = await chat(msg);
    assert.ok(r503.status === 503 || r503.status === 502, String(r503.status));
    sim.setFaults({ hang: true });
    expectError(await chat(msg), 504, 'provider_timeout'); // the whole-call deadline ended the hanging call
    sim.setFaults(undefined);
    const recovered = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] });
    assert.equal(recovered.object, 'chat.completion');
  });
});
