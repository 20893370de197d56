import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import { ApiError } from '../../../../core/errors/index.js';
import { chatCompletionRequest } from '../../interfaces/chat-completions/schema.js';
import { messagesRequest } from '../../interfaces/messages/schema.js';
import { createTranslator } from '../factory.js';
import { anthropicEvents, expectedMessageUsage, readFrames, testContext } from '../shared/test-fixtures.js';
import type { Translator } from '../types.js';

const context = testContext('openai-responses');

function openAiClient(body: Record<string, unknown>): Translator {
  return createTranslator(
    {
      family: 'openai',
      body: chatCompletionRequest.parse({ model: 'public-model', messages: [{ role: 'user', content: 'Hi' }], ...body }),
    },
    'openai-responses',
    context,
  );
}
function anthropicClient(body: Record<string, unknown>): Translator {
  return createTranslator(
    {
      family: 'anthropic',
      body: messagesRequest.parse({ model: 'public-model', max_tokens: 100, messages: [{ role: 'user', content: 'Hi' }], ...body }),
    },
    'openai-responses',
    context,
  );
}

/** A Responses stream as a supplier sends it (`event:` = the data's type). */
const events = anthropicEvents;

/** The client's frames with their data parsed. */
function run(t: Translator, upstream: ReturnType<typeof events>): { event: string | undefined; data: unknown }[] {
  let out = '';
  for (const event of upstream) out += t.streamEvent(event);
  out += t.streamEnd();
  return readFrames(out).map((f) => ({ event: f.event, data: f.data === '[DONE]' ? '[DONE]' : (JSON.parse(f.data) as unknown) }));
}

const usage = {
  input_tokens: 30,
  input_tokens_details: { cached_tokens: 10 },
  output_tokens: 5,
  output_tokens_details: { reasoning_tokens: 0 },
  total_tokens: 35,
};
const created = {
  type: 'response.created',
  sequence_number: 0,
  response: { id: 'resp_1', status: 'in_progress', model: 'upstream-model-1', output: [], usage: null },
};

describe('chat ↔ Responses bridge: request', () => {
  it('carries verbosity as text.verbosity, takes modalities ["text"] as asking nothing, and refuses audio', () => {
    const body = openAiClient({ verbosity: 'low', modalities: ['text'], response_format: { type: 'json_object' } }).request()
      .body as Record<string, unknown>;
    assert.deepEqual(body.text, { format: { type: 'json_object' }, verbosity: 'low' });
    assert.equal(body.modalities, undefined);
    assert.throws(
      () => openAiClient({ modalities: ['text', 'audio'] }).request(),
      (err: unknown) => err instanceof ApiError && err.code === 'unsupported_parameter' && err.param === 'modalities',
    );
  });

  it('maps messages, system prompt, tools, tool choice, limits and JSON schema', () => {
    const call = openAiClient({
      messages: [
        { role: 'system', content: 'Be brief.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Look' },
            { type: 'image_url', image_url: { url: 'https://x/y.png' } },
          ],
        },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'done' },
      ],
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
      tool_choice: { type: 'function', function: { name: 'f' } },
      max_completion_tokens: 64,
      temperature: 0.5,
      seed: 7,
      response_format: { type: 'json_schema', json_schema: { name: 'w', schema: { type: 'object' }, strict: true } },
    }).request();
    assert.equal(call.path, '/responses');
    assert.deepEqual(call.body, {
      model: 'upstream-model-1',
      instructions: 'Be brief.',
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'Look' },
            { type: 'input_image', image_url: 'https://x/y.png', detail: 'auto' },
          ],
        },
        { type: 'function_call', call_id: 'call_1', name: 'f', arguments: '{"a":1}' },
        { type: 'function_call_output', call_id: 'call_1', output: 'done' },
      ],
      temperature: 0.5,
      max_output_tokens: 64,
      store: false,
      tools: [{ type: 'function', name: 'f', parameters: { type: 'object' }, strict: false }],
      tool_choice: { type: 'function', name: 'f' },
      text: { format: { type: 'json_schema', name: 'w', schema: { type: 'object' }, strict: true } },
    });
  });

  it('refuses what the Responses API cannot honour, naming the client field; accepts no-op values', () => {
    const refused = (t: () => unknown, param: string) =>
      assert.throws(
        t,
        (e: unknown) => e instanceof ApiError && e.code === 'unsupported_parameter' && e.param === param && e.status === 400,
      );
    refused(() => openAiClient({ stop: ['x'] }).request(), 'stop');
    refused(() => anthropicClient({ stop_sequences: ['x'] }).request(), 'stop_sequences');
    refused(() => openAiClient({ n: 2 }).request(), 'n');
    refused(() => openAiClient({ presence_penalty: 0.5 }).request(), 'presence_penalty');
    refused(() => openAiClient({ logit_bias: { '1': 2 } }).request(), 'logit_bias');
    refused(() => openAiClient({ logprobs: true }).request(), 'logprobs');
    refused(() => openAiClient({ modalities: ['audio'] }).request(), 'modalities');
    refused(
      () => openAiClient({ messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: {} }] }] }).request(),
      'messages[0].content[0]',
    );
    const body = openAiClient({ n: 1, stop: [], presence_penalty: 0, logprobs: false }).request().body;
    assert.equal(body.n, undefined);
    assert.equal(body.stop, undefined);
  });
});

describe('chat ↔ Responses bridge: whole responses', () => {
  const response = (extra: Record<string, unknown>) => ({
    id: 'resp_1',
    object: 'response',
    created_at: 1,
    model: 'upstream-model-1',
    status: 'completed',
    error: null,
    usage,
    ...extra,
  });

  it('text, function calls and usage reach an OpenAI client; max_output_tokens reads as length', () => {
    const t = openAiClient({});
    const body = t.response(
      response({
        output: [
          { type: 'reasoning', id: 'rs_1', summary: [] },
          { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Hello' }] },
          { type: 'function_call', call_id: 'call_9', name: 'f', arguments: '{}' },
        ],
      }),
    ) as {
      model: string;
      choices: { message: { content: string; tool_calls: unknown[] }; finish_reason: string }[];
      usage: Record<string, unknown>;
    };
    assert.equal(body.model, 'public-model');
    assert.equal(body.choices[0]!.message.content, 'Hello');
    assert.deepEqual(body.choices[0]!.message.tool_calls, [{ id: 'call_9', type: 'function', function: { name: 'f', arguments: '{}' } }]);
    assert.equal(body.choices[0]!.finish_reason, 'tool_calls');
    assert.deepEqual(t.usage(), { inputTokens: 30, outputTokens: 5, cachedInputTokens: 10 });
    const cut = openAiClient({}).response(
      response({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, output: [] }),
    ) as { choices: { finish_reason: string }[] };
    assert.equal(cut.choices[0]!.finish_reason, 'length');
  });

  it('an Anthropic client gets a message with its stop reason and usage; a failed response is the supplier error', () => {
    const message = anthropicClient({}).response(
      response({ output: [{ type: 'message', content: [{ type: 'output_text', text: 'Hi there' }] }] }),
    ) as Record<string, unknown>;
    assert.equal(message.type, 'message');
    assert.deepEqual(message.content, [{ type: 'text', text: 'Hi there' }]);
    assert.equal(message.stop_reason, 'end_turn');
    assert.deepEqual(message.usage, expectedMessageUsage({ input: 20, output: 5, cacheRead: 10 }));
    assert.throws(
      () => anthropicClient({}).response(response({ status: 'failed', error: { code: 'server_error', message: 'boom' }, output: [] })),
      (e: unknown) => e instanceof ApiError && e.code === 'server_error' && e.status === 502,
    );
  });
});

describe('chat ↔ Responses bridge: streams', () => {
  const text = [
    created,
    { type: 'response.output_item.added', output_index: 0, item: { type: 'message', id: 'msg_1', content: [] } },
    { type: 'response.output_text.delta', output_index: 0, content_index: 0, delta: 'Hel' },
    { type: 'response.output_text.delta', output_index: 0, content_index: 0, delta: 'lo' },
    { type: 'response.output_text.done', output_index: 0, content_index: 0, text: 'Hello' },
  ];

  it('an OpenAI client gets chunks, the finish, the usage chunk (with svc totals) and [DONE]', () => {
    const t = openAiClient({ stream: true, stream_options: { include_usage: true } });
    const frames = run(t, events([...text, { type: 'response.completed', response: { status: 'completed', usage } }]));
    const chunks = frames.map((f) => f.data) as (
      { choices: { delta: { content?: string }; finish_reason: string | null }[]; usage?: unknown; svc?: unknown; model: string } | '[DONE]'
    )[];
    assert.equal(chunks.at(-1), '[DONE]');
    const data = chunks.slice(0, -1) as Exclude<(typeof chunks)[number], '[DONE]'>[];
    assert.equal(data.map((c) => c.choices[0]?.delta.content ?? '').join(''), 'Hello');
    assert.equal(data.at(-2)!.choices[0]!.finish_reason, 'stop');
    assert.deepEqual(data.at(-1)!.choices, []);
    assert.equal((data.at(-1)!.usage as { prompt_tokens: number }).prompt_tokens, 30);
    // 20 × $1 + 10 cached × $0.1 + 5 × $2 per million.
    assert.deepEqual(data.at(-1)!.svc, { input_tokens: 30, output_tokens: 5, cost_usd: '0.000031' });
    assert.deepEqual(new Set(data.map((c) => c.model)), new Set(['public-model']));
    // As OpenAI marks them with include_usage: every chunk before the usage chunk says usage: null.
    assert.deepEqual(
      data.slice(0, -1).map((c) => c.usage),
      data.slice(0, -1).map(() => null),
    );
    // Without include_usage the field is not there at all.
    const plain = run(
      openAiClient({ stream: true }),
      events([...text, { type: 'response.completed', response: { status: 'completed', usage } }]),
    );
    assert.ok(plain.slice(0, -1).every((f) => !Object.hasOwn(f.data as object, 'usage')));
  });

  it('an Anthropic client gets the full event sequence; function calls become tool_use blocks; incomplete is max_tokens', () => {
    const t = anthropicClient({ stream: true, tools: [{ name: 'f', input_schema: { type: 'object' } }] });
    const frames = run(
      t,
      events([
        created,
        {
          type: 'response.output_item.added',
          output_index: 0,
          item: { type: 'function_call', id: 'fc_1', call_id: 'call_7', name: 'f', arguments: '' },
        },
        { type: 'response.function_call_arguments.delta', output_index: 0, item_id: 'fc_1', delta: '{"a":' },
        { type: 'response.function_call_arguments.delta', output_index: 0, item_id: 'fc_1', delta: '1}' },
        { type: 'response.incomplete', response: { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, usage } },
      ]),
    );
    assert.deepEqual(
      frames.map((f) => f.event),
      [
        'message_start',
        'ping',
        'content_block_start',
        'content_block_delta',
        'content_block_delta',
        'content_block_stop',
        'message_delta',
        'message_stop',
      ],
    );
    assert.deepEqual((frames[2]!.data as { content_block: unknown }).content_block, {
      type: 'tool_use',
      id: 'call_7',
      name: 'f',
      input: {},
    });
    const delta = frames[6]!.data as { delta: { stop_reason: string }; usage: { output_tokens: number } };
    assert.equal(delta.delta.stop_reason, 'max_tokens');
    assert.equal(delta.usage.output_tokens, 5);
  });

  it('response.failed and error events throw the supplier error; a stream without its terminal event is stream_interrupted', () => {
    assert.throws(
      () =>
        run(
          openAiClient({ stream: true }),
          events([
            created,
            { type: 'response.failed', response: { status: 'failed', error: { code: 'rate_limit_exceeded', message: 'slow down' } } },
          ]),
        ),
      (e: unknown) => e instanceof ApiError && e.code === 'rate_limit_exceeded' && e.status === 429,
    );
    assert.throws(
      () =>
        run(anthropicClient({ stream: true }), events([created, { type: 'error', code: 'server_error', message: 'boom', param: null }])),
      (e: unknown) => e instanceof ApiError && e.code === 'server_error',
    );
    assert.throws(
      () => run(anthropicClient({ stream: true }), events(text)),
      (e: unknown) => e instanceof ApiError && e.code === 'stream_interrupted',
    );
  });
});
