// Malformed requests on each interface get that interface's catalogue error (status, code,
// `<code> - <human_message>`, param) and never a 500 — read both as the raw body and through the
// official SDKs' error classes. Supplier errors cross the family boundary with their status,
// Retry-After and provider code; a stream cut mid-way ends in an in-stream error, never a clean end.
import { afterAll, beforeAll, describe, test } from 'vitest';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import type { MessageCreateParamsNonStreaming } from '@anthropic-ai/sdk/resources/messages';
import { createParser } from 'eventsource-parser';
import OpenAI from 'openai';
import type { ResponseCreateParamsStreaming } from 'openai/resources/responses/responses';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.js';

interface ErrorBody {
  type: string;
  error: {
    code: string;
    type: string;
    message: string;
    human_message: string;
    param: string | null;
    request_id?: string;
    retry_after_seconds?: number;
  };
}
interface Reply {
  status: number;
  headers: Headers;
  body: ErrorBody;
}

/** What a malformed request must produce. `param` as a RegExp when only its prefix is fixed. */
interface Expected {
  status: number;
  code: string;
  /** Alternatives accepted for the code (documented per case). */
  codes?: string[];
  param?: string | RegExp;
}

/** Runs a call that must fail and returns what it threw. */
async function failure(call: () => Promise<unknown>): Promise<unknown> {
  try {
    await call();
  } catch (error) {
    return error;
  }
  return assert.fail('expected the call to fail');
}

function matchParam(actual: string | null | undefined, expected: string | RegExp | undefined): void {
  if (expected === undefined) return;
  if (typeof expected === 'string') assert.equal(actual, expected);
  else assert.match(actual ?? '', expected);
}

function codeOk(actual: string | null | undefined, expected: Expected): void {
  if (expected.codes) assert.ok(expected.codes.includes(actual ?? ''), `code ${actual} not in ${expected.codes.join(', ')}`);
  else assert.equal(actual, expected.code);
}

/** The raw body of a catalogue error, as both SDK families read it. */
function expectError(reply: Reply, expected: Expected): void {
  assert.notEqual(reply.status, 500, JSON.stringify(reply.body));
  assert.equal(reply.status, expected.status, JSON.stringify(reply.body));
  assert.equal(reply.body.type, 'error');
  codeOk(reply.body.error.code, expected);
  assert.ok(reply.body.error.human_message.length > 0);
  assert.equal(reply.body.error.message, `${reply.body.error.code} - ${reply.body.error.human_message}`);
  matchParam(reply.body.error.param, expected.param);
}

/** The same error through the OpenAI SDK's classes. */
function expectOpenAiError(error: unknown, expected: Expected): void {
  assert.ok(error instanceof OpenAI.APIError, String(error));
  assert.equal(error.status, expected.status, error.message);
  const classes: Record<number, unknown> = {
    400: OpenAI.BadRequestError,
    401: OpenAI.AuthenticationError,
    403: OpenAI.PermissionDeniedError,
    404: OpenAI.NotFoundError,
    429: OpenAI.RateLimitError,
  };
  const cls = classes[expected.status] ?? OpenAI.InternalServerError;
  assert.ok(error instanceof (cls as typeof OpenAI.APIError), `${error.constructor.name} for ${expected.status}`);
  codeOk(error.code, expected);
  matchParam(error.param, expected.param);
  assert.ok(error.message.startsWith(`${expected.status} ${error.code} - `), error.message);
}

/** The same error through the Anthropic SDK's classes (the body has top-level `type: 'error'`). */
function expectAnthropicError(error: unknown, expected: Expected): void {
  assert.ok(error instanceof Anthropic.APIError, String(error));
  assert.equal(error.status, expected.status, error.message);
  const classes: Record<number, unknown> = {
    400: Anthropic.BadRequestError,
    401: Anthropic.AuthenticationError,
    403: Anthropic.PermissionDeniedError,
    404: Anthropic.NotFoundError,
    429: Anthropic.RateLimitError,
  };
  const cls = classes[expected.status] ?? Anthropic.InternalServerError;
  assert.ok(error instanceof (cls as typeof Anthropic.APIError), `${error.constructor.name} for ${expected.status}`);
  const body = error.error as ErrorBody;
  assert.equal(body.type, 'error');
  codeOk(body.error.code, expected);
  codeOk(error.errorCode, expected);
  matchParam(body.error.param, expected.param);
  assert.ok(error.apiMessage?.startsWith(`${body.error.code} - `), String(error.apiMessage));
}

/** SSE frames of a raw streamed body. */
async function readFrames(res: Response): Promise<{ event: string | undefined; data: string }[]> {
  const frames: { event: string | undefined; data: string }[] = [];
  const parser = createParser({ onEvent: (e) => frames.push({ event: e.event, data: e.data }) });
  parser.feed(await res.text());
  return frames;
}

describe('interface errors through raw HTTP and both SDKs', () => {
  let h: GatewayHarness;
  let key: string;
  let openai: OpenAI;
  let anthropic: Anthropic;
  let native: OpenAI;

  beforeAll(async () => {
    h = await startGatewayHarness([
      { name: 'oa', protocol: 'openai', region: 'EU', models: [{ id: 'gpt-x' }] },
      { name: 'an', protocol: 'anthropic', region: 'EU', models: [{ id: 'claude-x' }] },
      { name: 'rs', protocol: 'openai-responses', region: 'EU', models: [{ id: 'resp-x' }] },
    ]);
    key = await h.createKey();
    openai = new OpenAI({ baseURL: `${h.gateway.url}/v1`, apiKey: key, maxRetries: 0 });
    anthropic = new Anthropic({ baseURL: h.gateway.url, apiKey: key, maxRetries: 0 });
    native = new OpenAI({ baseURL: `${h.gateway.url}/v1/native`, apiKey: key, maxRetries: 0 });
  });
  afterAll(async () => {
    for (const sim of h.simulators.values()) sim.setFaults(undefined);
    await h.close();
  });

  const post = async (
    path: string,
    body: unknown,
    headers: Record<string, string> = { authorization: `Bearer ${key}` },
  ): Promise<Reply> => {
    const res = await fetch(`${h.gateway.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
    return { status: res.status, headers: res.headers, body: (await res.json()) as ErrorBody };
  };
  const upstreamCalls = () => [...h.simulators.values()].reduce((n, s) => n + s.requests.length, 0);

  describe('/v1/messages', () => {
    const messages = [{ role: 'user', content: 'hi' }];
    const cases: { title: string; body: Record<string, unknown>; expected: Expected }[] = [
      { title: 'missing max_tokens', body: { messages }, expected: { status: 400, code: 'missing_fields', param: 'max_tokens' } },
      {
        title: 'a role Anthropic does not have',
        body: { max_tokens: 50, messages: [{ role: 'system', content: 'hi' }] },
        expected: { status: 400, code: 'validation_error', param: 'messages[0].role' },
      },
      {
        title: 'an unknown content block type',
        body: { max_tokens: 50, messages: [{ role: 'user', content: [{ type: 'video', url: 'https://example.com/v.mp4' }] }] },
        expected: { status: 400, code: 'validation_error', param: /^messages\[0\]\.content/ },
      },
      {
        title: 'temperature 1.5 (Anthropic allows 0–1)',
        body: { max_tokens: 50, messages, temperature: 1.5 },
        expected: { status: 400, code: 'validation_error', param: 'temperature' },
      },
      {
        title: "stream: 'yes'",
        body: { max_tokens: 50, messages, stream: 'yes' },
        expected: { status: 400, code: 'validation_error', param: 'stream' },
      },
      {
        title: 'tool_choice any without tools',
        body: { max_tokens: 50, messages, tool_choice: { type: 'any' } },
        expected: { status: 400, code: 'validation_error', param: 'tool_choice' },
      },
      {
        title: 'tool_choice naming a tool the request does not define',
        body: {
          max_tokens: 50,
          messages,
          tools: [{ name: 'a', input_schema: { type: 'object' } }],
          tool_choice: { type: 'tool', name: 'b' },
        },
        expected: { status: 400, code: 'validation_error', param: 'tool_choice' },
      },
    ];
    for (const model of ['claude-x', 'gpt-x']) {
      for (const c of cases) {
        test(`${c.title} (${model}): raw body, x-api-key and the Anthropic SDK`, async () => {
          const before = upstreamCalls();
          expectError(
            await post('/v1/messages', { model, ...c.body }, { 'x-api-key': key, 'anthropic-version': '2023-06-01' }),
            c.expected,
          );
          const error = await failure(() => anthropic.messages.create({ model, ...c.body } as unknown as MessageCreateParamsNonStreaming));
          expectAnthropicError(error, c.expected);
          assert.equal(upstreamCalls(), before, 'nothing reached a supplier');
        });
      }
    }

    test('a non-date anthropic-version header', async () => {
      const body = { model: 'claude-x', max_tokens: 50, messages };
      const expected: Expected = { status: 400, code: 'invalid_request', param: 'anthropic-version' };
      expectError(await post('/v1/messages', body, { 'x-api-key': key, 'anthropic-version': 'latest' }), expected);
      expectAnthropicError(
        await failure(() =>
          anthropic.messages.create(body as MessageCreateParamsNonStreaming, { headers: { 'anthropic-version': 'latest' } }),
        ),
        expected,
      );
      const ok = await post('/v1/messages', body, { 'x-api-key': key, 'anthropic-version': '2023-06-01' });
      assert.equal(ok.status, 200);
    });

    test('x-api-key: missing → 401 missing_api_key, wrong → 401 invalid_api_key, right → 200', async () => {
      const body = { model: 'claude-x', max_tokens: 50, messages };
      expectError(await post('/v1/messages', body, { 'anthropic-version': '2023-06-01' }), { status: 401, code: 'missing_api_key' });
      expectError(await post('/v1/messages', body, { 'x-api-key': 'svc-sk-wrong', 'anthropic-version': '2023-06-01' }), {
        status: 401,
        code: 'invalid_api_key',
      });
      expectError(await post('/v1/messages/count_tokens', { model: 'claude-x', messages }, { 'x-api-key': 'svc-sk-wrong' }), {
        status: 401,
        code: 'invalid_api_key',
      });
      const wrong = new Anthropic({ baseURL: h.gateway.url, apiKey: 'svc-sk-wrong', maxRetries: 0 });
      expectAnthropicError(await failure(() => wrong.messages.create(body as MessageCreateParamsNonStreaming)), {
        status: 401,
        code: 'invalid_api_key',
      });
      const right = await post('/v1/messages', body, { 'x-api-key': key, 'anthropic-version': '2023-06-01' });
      assert.equal(right.status, 200);
    });
  });

  describe('/v1/native/responses', () => {
    const input = [{ role: 'user', content: 'hi' }];
    const cases: { title: string; body: Record<string, unknown>; expected: Expected }[] = [
      {
        title: 'stream false',
        body: { model: 'resp-x', input, stream: false },
        expected: { status: 400, code: 'validation_error', param: 'stream' },
      },
      {
        title: 'stream missing',
        body: { model: 'resp-x', input },
        // "required and must be true": either code names the field.
        expected: { status: 400, code: 'validation_error', codes: ['validation_error', 'missing_fields'], param: 'stream' },
      },
      {
        title: 'input not a list',
        body: { model: 'resp-x', input: 'hi', stream: true },
        expected: { status: 400, code: 'validation_error', param: 'input' },
      },
      {
        title: 'max_output_tokens past any count (outside probe: reserved "Infinity USD")',
        body: { model: 'resp-x', input, stream: true, max_output_tokens: 1e308 },
        expected: { status: 400, code: 'validation_error', param: 'max_output_tokens' },
      },
      {
        title: 'max_output_tokens not a whole number',
        body: { model: 'resp-x', input, stream: true, max_output_tokens: 2.5 },
        expected: { status: 400, code: 'validation_error', param: 'max_output_tokens' },
      },
      {
        title: 'an input item with a bad role',
        body: { model: 'resp-x', input: [{ role: 'wizard', content: 'hi' }], stream: true },
        expected: { status: 400, code: 'validation_error', param: /^input\[0\]/ },
      },
      {
        title: 'an unknown model',
        body: { model: 'gpt-9', input, stream: true },
        expected: { status: 404, code: 'model_not_found', param: 'model' },
      },
      {
        title: 'a model served only by an anthropic chat supplier',
        body: { model: 'claude-x', input, stream: true },
        expected: { status: 400, code: 'capability_unsupported', param: 'model' },
      },
      {
        title: 'a model served only by an openai-protocol (chat) supplier',
        body: { model: 'gpt-x', input, stream: true },
        expected: { status: 400, code: 'capability_unsupported', param: 'model' },
      },
    ];
    for (const c of cases) {
      test(`${c.title}: raw body and the OpenAI SDK`, async () => {
        const before = upstreamCalls();
        expectError(await post('/v1/native/responses', c.body), c.expected);
        const error = await failure(async () => {
          const stream = await native.responses.create(c.body as unknown as ResponseCreateParamsStreaming);
          for await (const _event of stream) {
            // must not get here
          }
        });
        expectOpenAiError(error, c.expected);
        assert.equal(upstreamCalls(), before, 'nothing reached a supplier');
      });
    }
  });

  describe('/v1/chat/completions with an anthropic supplier', () => {
    test('n=2 cannot be expressed upstream → unsupported_parameter naming n', async () => {
      const body = { model: 'claude-x', messages: [{ role: 'user' as const, content: 'hi' }], n: 2 };
      const before = upstreamCalls();
      const expected: Expected = { status: 400, code: 'unsupported_parameter', param: 'n' };
      expectError(await post('/v1/chat/completions', body), expected);
      expectOpenAiError(await failure(() => openai.chat.completions.create(body)), expected);
      assert.equal(upstreamCalls(), before, 'nothing reached a supplier');
      const one = await openai.chat.completions.create({ ...body, n: 1 });
      assert.equal(one.choices.length, 1);
    });

    test('an OpenAI field of the wrong type is a validation_error naming it, on every supplier, before any supplier call', async () => {
      const messages = [{ role: 'user' as const, content: 'hi' }];
      for (const [field, value] of [
        ['store', 'yes'],
        ['reasoning_effort', 5],
        ['service_tier', 5],
        ['logit_bias', 'x'],
        ['logit_bias', { '50256': 101 }],
        ['modalities', 'x'],
        ['prediction', 5],
        ['web_search_options', 5],
        ['audio', 5],
      ] as const) {
        for (const model of ['claude-x', 'gpt-x']) {
          const before = upstreamCalls();
          expectError(await post('/v1/chat/completions', { model, messages, [field]: value }), {
            status: 400,
            code: 'validation_error',
            param: new RegExp(`^${field}`),
          });
          assert.equal(upstreamCalls(), before, `${field} on ${model}: nothing reached a supplier`);
        }
      }
      // The right types still pass through.
      const fine = await post('/v1/chat/completions', {
        model: 'gpt-x',
        messages,
        store: false,
        service_tier: 'auto',
        logit_bias: { '50256': -100 },
        modalities: ['text'],
      });
      assert.equal(fine.status, 200);
    });

    test('a forced tool call without that tool is a validation_error naming tool_choice, on every supplier', async () => {
      const messages = [{ role: 'user' as const, content: 'hi' }];
      const tools = [{ type: 'function' as const, function: { name: 'a', parameters: { type: 'object' } } }];
      const expected: Expected = { status: 400, code: 'validation_error', param: 'tool_choice' };
      for (const model of ['claude-x', 'gpt-x']) {
        const before = upstreamCalls();
        for (const body of [
          { model, messages, tool_choice: 'required' as const },
          { model, messages, tools, tool_choice: { type: 'function' as const, function: { name: 'b' } } },
        ]) {
          expectError(await post('/v1/chat/completions', body), expected);
          expectOpenAiError(await failure(() => openai.chat.completions.create(body)), expected);
        }
        assert.equal(upstreamCalls(), before, 'nothing reached a supplier');
      }
    });
  });

  test('stream_options without stream is a validation_error naming it, as OpenAI answers', async () => {
    const messages = [{ role: 'user' as const, content: 'hi' }];
    const expected: Expected = { status: 400, code: 'validation_error', param: 'stream_options' };
    for (const model of ['claude-x', 'gpt-x']) {
      const before = upstreamCalls();
      for (const stream of [undefined, false]) {
        const body = { model, messages, stream_options: { include_usage: true }, ...(stream !== undefined && { stream }) };
        expectError(await post('/v1/chat/completions', body), expected);
      }
      assert.equal(upstreamCalls(), before, 'nothing reached a supplier');
      // null says nothing, with or without a stream.
      assert.equal((await post('/v1/chat/completions', { model, messages, stream_options: null })).status, 200);
    }
  });

  describe('supplier errors across families', () => {
    test('anthropic supplier 429 → OpenAI SDK RateLimitError with Retry-After 3 and the provider code', async () => {
      const sim = h.simulators.get('an')!;
      sim.setFaults({ status: 429, retryAfterSeconds: 3 });
      try {
        const body = { model: 'claude-x', messages: [{ role: 'user' as const, content: 'hi' }] };
        const raw = await post('/v1/chat/completions', body);
        expectError(raw, { status: 429, code: 'rate_limit_error' });
        assert.equal(raw.headers.get('retry-after'), '3');
        assert.equal(raw.body.error.retry_after_seconds, 3);

        const error = await failure(() => openai.chat.completions.create(body));
        expectOpenAiError(error, { status: 429, code: 'rate_limit_error' });
        assert.ok(error instanceof OpenAI.RateLimitError);
        assert.equal(error.headers?.get('retry-after'), '3');

        // A stream request fails the same way, before any byte of the stream.
        const streamed = await failure(async () => {
          const stream = await openai.chat.completions.create({ ...body, stream: true });
          for await (const _chunk of stream) {
            // must not get here
          }
        });
        expectOpenAiError(streamed, { status: 429, code: 'rate_limit_error' });
      } finally {
        sim.setFaults(undefined);
      }
    });

    test('openai supplier 503 → Anthropic SDK error of the 503 family, provider code kept', async () => {
      const sim = h.simulators.get('oa')!;
      sim.setFaults({ status: 503 });
      try {
        const body = { model: 'gpt-x', max_tokens: 50, messages: [{ role: 'user' as const, content: 'hi' }] };
        const raw = await post('/v1/messages', body, { 'x-api-key': key, 'anthropic-version': '2023-06-01' });
        expectError(raw, { status: 503, code: 'server_error' });
        assert.equal(raw.body.error.type, 'overloaded_error');

        const error = await failure(() => anthropic.messages.create(body));
        expectAnthropicError(error, { status: 503, code: 'server_error' });
        assert.ok(error instanceof Anthropic.InternalServerError);
        assert.equal(error.type, 'overloaded_error');
      } finally {
        sim.setFaults(undefined);
      }
    });
  });

  describe('a stream cut mid-way ends in an in-stream error, never a clean end', () => {
    const cases = [
      { client: 'openai', model: 'gpt-x', supplier: 'oa' },
      { client: 'openai', model: 'claude-x', supplier: 'an' },
      { client: 'anthropic', model: 'claude-x', supplier: 'an' },
      { client: 'anthropic', model: 'gpt-x', supplier: 'oa' },
    ] as const;
    for (const c of cases) {
      test(`${c.client} client, ${c.supplier === 'oa' ? 'openai' : 'anthropic'} supplier`, async () => {
        const sim = h.simulators.get(c.supplier)!;
        // Cut after some content: the Anthropic simulator's first three events (message_start,
        // ping, content_block_start) are framing, and a cut before any content is an HTTP error
        // that fails over (the next test), not an in-stream one.
        sim.setFaults({ cutAfterEvents: c.supplier === 'an' ? 5 : 3 });
        try {
          const messages = [{ role: 'user' as const, content: 'Tell me a long story about a lighthouse keeper and the sea' }];
          if (c.client === 'openai') {
            const res = await fetch(`${h.gateway.url}/v1/chat/completions`, {
              method: 'POST',
              headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
              body: JSON.stringify({ model: c.model, messages, stream: true }),
            });
            assert.equal(res.status, 200, 'the stream had started');
            const frames = await readFrames(res);
            assert.ok(frames.length >= 2, 'partial output, then the error');
            assert.ok(!frames.some((f) => f.data === '[DONE]'), 'no [DONE] after a cut');
            const last = JSON.parse(frames.at(-1)!.data) as { error?: ErrorBody['error'] };
            assert.equal(last.error?.code, 'stream_interrupted', frames.at(-1)!.data);
            assert.equal(last.error.message, `stream_interrupted - ${last.error.human_message}`);
            // The id support asks for, as in every error body: the one the response's header gave.
            assert.match(res.headers.get('x-request-id') ?? '', /^req_/);
            assert.equal(last.error.request_id, res.headers.get('x-request-id'));

            const iterated = await failure(async () => {
              const stream = await openai.chat.completions.create({ model: c.model, messages, stream: true });
              for await (const _chunk of stream) {
                // partial output arrives before the error
              }
            });
            assert.ok(iterated instanceof OpenAI.APIError, String(iterated));
            assert.equal(iterated.code, 'stream_interrupted');
            const helper = await failure(() => openai.chat.completions.stream({ model: c.model, messages }).finalChatCompletion());
            assert.ok(helper instanceof OpenAI.APIError && helper.code === 'stream_interrupted', String(helper));
          } else {
            const res = await fetch(`${h.gateway.url}/v1/messages`, {
              method: 'POST',
              headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
              body: JSON.stringify({ model: c.model, max_tokens: 200, messages, stream: true }),
            });
            assert.equal(res.status, 200, 'the stream had started');
            const frames = await readFrames(res);
            assert.ok(
              frames.every((f) => f.event !== undefined),
              'every Anthropic frame is named',
            );
            assert.ok(frames.length >= 2, 'partial output, then the error');
            assert.equal(frames[0]!.event, 'message_start');
            assert.ok(!frames.some((f) => f.event === 'message_stop'), 'no message_stop after a cut');
            const last = frames.at(-1)!;
            assert.equal(last.event, 'error');
            const data = JSON.parse(last.data) as {
              type: string;
              request_id?: string;
              error: { type: string; code?: string; message: string; request_id?: string };
            };
            assert.equal(data.type, 'error');
            // The Anthropic SDK reads the id from `request-id`, streamed or not; the error event carries it too.
            assert.match(res.headers.get('request-id') ?? '', /^req_/);
            assert.equal(res.headers.get('request-id'), res.headers.get('x-request-id'));
            assert.equal(data.request_id, res.headers.get('request-id'));
            assert.equal(data.error.request_id, res.headers.get('request-id'));
            assert.ok(data.error.type.length > 0);
            assert.equal(data.error.code, 'stream_interrupted', last.data);

            const iterated = await failure(async () => {
              const stream = await anthropic.messages.create({ model: c.model, max_tokens: 200, messages, stream: true });
              for await (const _event of stream) {
                // partial output arrives before the error
              }
            });
            assert.ok(iterated instanceof Anthropic.APIError, String(iterated));
            assert.equal((iterated.error as { error?: { code?: string } }).error?.code, 'stream_interrupted');
            // As on HTTP errors, the SDK's own accessor (error.details.error_code) names the code.
            assert.equal(iterated.errorCode, 'stream_interrupted', `errorCode of the in-stream error: ${JSON.stringify(iterated.error)}`);
            const helper = await failure(() => anthropic.messages.stream({ model: c.model, max_tokens: 200, messages }).finalMessage());
            assert.ok(helper instanceof Anthropic.APIError, String(helper));
          }
        } finally {
          sim.setFaults(undefined);
        }
      });
    }

    test('a stream cut before any content is an HTTP error through both SDKs, not a 200 with an error in it', async () => {
      const sim = h.simulators.get('an')!;
      sim.setFaults({ cutAfterEvents: 3 }); // message_start, ping, content_block_start: framing only
      try {
        const messages = [{ role: 'user' as const, content: 'Tell me a long story about a lighthouse keeper and the sea' }];
        const raw = await fetch(`${h.gateway.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'claude-x', messages, stream: true }),
        });
        const body = (await raw.json()) as ErrorBody;
        expectError({ status: raw.status, headers: raw.headers, body }, { status: 502, code: 'stream_interrupted' });
        // Nothing was generated or sent: as safe to retry as a refused request, and said so.
        assert.equal(raw.headers.get('x-should-retry'), 'true');
        assert.equal((body as unknown as { error: { retryable: boolean } }).error.retryable, true);
        const viaOpenAi = await failure(async () => {
          for await (const _chunk of await openai.chat.completions.create({ model: 'claude-x', messages, stream: true })) {
            // nothing arrives
          }
        });
        assert.ok(viaOpenAi instanceof OpenAI.APIError && viaOpenAi.status === 502, String(viaOpenAi));
        const viaAnthropic = await failure(() =>
          anthropic.messages.stream({ model: 'claude-x', max_tokens: 200, messages }).finalMessage(),
        );
        assert.ok(viaAnthropic instanceof Anthropic.APIError && viaAnthropic.status === 502, String(viaAnthropic));
      } finally {
        sim.setFaults(undefined);
      }
    });

    test('native lane (passthrough): the Responses stream ends with an error event, never response.completed', async () => {
      const sim = h.simulators.get('rs')!;
      // Cut after content began (created, in_progress, output_item.added, content_part.added, a
      // delta, …): before any content the lane answers an HTTP error instead (supplier-misbehaviour.test.ts).
      sim.setFaults({ cutAfterEvents: 6 });
      try {
        const body = { model: 'resp-x', input: [{ role: 'user' as const, content: 'a long answer please' }], stream: true as const };
        const res = await fetch(`${h.gateway.url}/v1/native/responses`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        assert.equal(res.status, 200);
        const frames = await readFrames(res);
        assert.deepEqual(
          frames.slice(0, 3).map((f) => f.event),
          ['response.created', 'response.in_progress', 'response.output_item.added'],
        );
        assert.ok(!frames.some((f) => f.event === 'response.completed'));
        const last = frames.at(-1)!;
        assert.equal(last.event, 'error');
        const data = JSON.parse(last.data) as {
          type: string;
          code: string;
          message: string;
          human_message: string;
          error: { code: string; type: string; human_message: string };
        };
        // The Responses API's own error event fields, for raw-HTTP clients...
        assert.equal(data.type, 'error');
        assert.equal(data.code, 'stream_interrupted');
        // ...numbered after the last event passed through, as every event of the stream is.
        const numbers = frames.slice(0, -1).map((f) => (JSON.parse(f.data) as { sequence_number: number }).sequence_number);
        assert.equal((data as unknown as { sequence_number: number }).sequence_number, numbers.at(-1)! + 1);
        assert.equal((data.error as { request_id?: string }).request_id, res.headers.get('x-request-id'));
        assert.match(data.message, /^stream_interrupted - /);
        assert.ok(data.human_message.length > 0);
        // ...and the catalogue error object every interface carries.
        assert.equal(data.error.code, 'stream_interrupted');
        assert.equal(data.error.type, 'api_error');
        assert.equal(data.error.human_message, data.human_message);
        // The SDK throws it as an APIError with the code, as it does for a chat stream cut mid-way.
        const types: string[] = [];
        const thrown = await failure(async () => {
          for await (const event of await native.responses.create(body)) types.push(event.type);
        });
        assert.ok(thrown instanceof OpenAI.APIError, String(thrown));
        assert.equal(thrown.code, 'stream_interrupted');
        assert.ok(types.includes('response.created') && !types.includes('response.completed'));
        const helper = await failure(() => native.responses.stream(body).finalResponse());
        assert.ok(helper instanceof OpenAI.APIError && helper.code === 'stream_interrupted', String(helper));
      } finally {
        sim.setFaults(undefined);
      }
    });
  });
});
