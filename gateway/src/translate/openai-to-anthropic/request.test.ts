import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import { ApiError } from '../../../../core/errors/index.js';
import { chatCompletionRequest, type ChatCompletionRequest } from '../../interfaces/chat-completions/schema.js';
import { messagesRequest } from '../../interfaces/messages/schema.js';
import { testContext, testRoute } from '../shared/test-fixtures.js';
import { missingToolResultText } from './messages.js';
import { OpenAiToAnthropic } from './translator.js';

/** Validates like the interface does, translates, and checks the result against the messages schema. */
function translate(raw: Record<string, unknown>, context = testContext('anthropic')): Record<string, unknown> {
  const request: ChatCompletionRequest = chatCompletionRequest.parse({ model: 'public-model', ...raw });
  const call = new OpenAiToAnthropic(request, context).request();
  assert.equal(call.path, '/messages');
  messagesRequest.parse(call.body);
  return call.body;
}

function rejects(raw: Record<string, unknown>, code: string, param: string): void {
  assert.throws(
    () => translate(raw),
    (err: unknown) => err instanceof ApiError && err.code === code && err.param === param,
  );
}

const weatherCall = (id: string, args = '{"city":"Paris"}') => ({
  id,
  type: 'function',
  function: { name: 'get_weather', arguments: args },
});

describe('OpenAiToAnthropic.request', () => {
  it('moves system and developer messages, wherever they are, to top-level system blocks in order', () => {
    const body = translate({
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi' },
        { role: 'developer', content: [{ type: 'text', text: 'Answer in French.' }] },
        { role: 'system', content: '' },
      ],
    });
    assert.deepEqual(body.system, [
      { type: 'text', text: 'Be brief.' },
      { type: 'text', text: 'Answer in French.' },
    ]);
    assert.deepEqual(body.messages, [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }]);
  });

  it('uses the upstream model id and carries the sampling fields over; parameters asking for nothing are left out', () => {
    const body = translate({
      messages: [{ role: 'user', content: 'Hi' }],
      temperature: 1,
      top_p: 0.9,
      max_completion_tokens: 321,
      max_tokens: 999,
      stop: 'END',
      user: 'user-42',
      stream: true,
      stream_options: { include_usage: true },
      seed: 7,
      logprobs: false,
      frequency_penalty: 0,
      presence_penalty: 0,
      logit_bias: {},
      region: 'EU',
      metadata: { session_id: 's1' },
      n: 1,
    });
    assert.deepEqual(body, {
      model: 'upstream-model-1',
      max_tokens: 321,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }],
      stop_sequences: ['END'],
      temperature: 1,
      top_p: 0.9,
      metadata: { user_id: 'user-42' },
      stream: true,
    });
  });

  it('takes max_tokens when max_completion_tokens is absent, else the default capped at the model maximum', () => {
    assert.equal(translate({ messages: [{ role: 'user', content: 'Hi' }], max_tokens: 55 }).max_tokens, 55);
    assert.equal(translate({ messages: [{ role: 'user', content: 'Hi' }] }).max_tokens, 4096);
    const capped = testContext('anthropic', { route: testRoute('anthropic', 'claude-x', 1024) });
    assert.equal(translate({ messages: [{ role: 'user', content: 'Hi' }] }, capped).max_tokens, 1024);
    assert.deepEqual(translate({ messages: [{ role: 'user', content: 'Hi' }], stop: ['a', '', 'b'] }).stop_sequences, ['a', 'b']);
  });

  it('refuses, naming it, a parameter value the Anthropic protocol cannot honour instead of changing it silently', () => {
    const refused = (extra: Record<string, unknown>) => {
      try {
        translate({ messages: [{ role: 'user', content: 'Hi' }], ...extra });
      } catch (error) {
        return error as ApiError;
      }
      throw new Error(`expected ${JSON.stringify(extra)} to be refused`);
    };
    for (const [extra, param] of [
      [{ temperature: 1.6 }, 'temperature'],
      [{ n: 2 }, 'n'],
      [{ frequency_penalty: 0.5 }, 'frequency_penalty'],
      [{ presence_penalty: -1 }, 'presence_penalty'],
      [{ logprobs: true }, 'logprobs'],
      [{ top_logprobs: 3 }, 'top_logprobs'],
      [{ logit_bias: { 50256: -100 } }, 'logit_bias'],
    ] as const) {
      const error = refused(extra);
      assert.equal(error.code, 'unsupported_parameter');
      assert.equal(error.status, 400);
      assert.equal(error.param, param);
    }
  });

  it('refuses a field it does not carry when it asks for something, and lets the known hints and empty values pass', () => {
    const messages = [{ role: 'user', content: 'Hi' }];
    const legacy = { functions: [{ name: 'f', parameters: { type: 'object', properties: {} } }], function_call: { name: 'f' } };
    rejects({ messages, ...legacy }, 'unsupported_parameter', 'functions');
    rejects({ messages, web_search_options: { search_context_size: 'low' } }, 'unsupported_parameter', 'web_search_options');
    rejects({ messages, verbosity: 'low' }, 'unsupported_parameter', 'verbosity');
    rejects({ messages, store: true }, 'unsupported_parameter', 'store');
    rejects({ messages, a_field_openai_adds_next_year: { on: true } }, 'unsupported_parameter', 'a_field_openai_adds_next_year');
    rejects({ messages, modalities: ['text', 'audio'] }, 'unsupported_parameter', 'modalities');
    const body = translate({
      messages,
      store: false,
      functions: [],
      seed: 1,
      prompt_cache_key: 'k',
      prompt_cache_retention: '24h',
      safety_identifier: 'u-1',
      service_tier: 'auto',
      reasoning_effort: 'low',
      modalities: ['text'],
      top_k: 40,
    });
    for (const left of [
      'store',
      'functions',
      'seed',
      'prompt_cache_key',
      'prompt_cache_retention',
      'safety_identifier',
      'service_tier',
      'reasoning_effort',
      'modalities',
    ])
      assert.equal(body[left], undefined, left);
    // top_k (vLLM's extension to the OpenAI API) is Anthropic's own parameter: carried over.
    assert.equal(body.top_k, 40);
  });

  it('leaves out top_p: 1 next to temperature, which newer models refuse together', () => {
    const both = translate({ messages: [{ role: 'user', content: 'Hi' }], temperature: 0.5, top_p: 1 });
    assert.equal(both.temperature, 0.5);
    assert.equal('top_p' in both, false);
    assert.equal(translate({ messages: [{ role: 'user', content: 'Hi' }], top_p: 1 }).top_p, 1);
    assert.equal(translate({ messages: [{ role: 'user', content: 'Hi' }], temperature: 0.5, top_p: 0.9 }).top_p, 0.9);
  });

  it('rejects n > 1 with unsupported_parameter on n', () => {
    rejects({ messages: [{ role: 'user', content: 'Hi' }], n: 3 }, 'unsupported_parameter', 'n');
  });

  it('turns image parts into base64, url and document blocks', () => {
    const body = translate({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is this?' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'high' } },
            { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg' } },
            { type: 'image_url', image_url: { url: 'data:application/pdf;base64,JVBERi0x' } },
          ],
        },
      ],
    });
    assert.deepEqual(body.messages, [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is this?' },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
          { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
          { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0x' } },
        ],
      },
    ]);
  });

  it('refuses image types and audio Anthropic cannot read, naming the message', () => {
    rejects(
      { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/tiff;base64,AAAA' } }] }] },
      'unsupported_parameter',
      'messages[0].content',
    );
    rejects(
      { messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: {} }] }] },
      'unsupported_parameter',
      'messages[0].content',
    );
  });

  it('never sends empty text blocks (pitfall 4)', () => {
    const body = translate({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: '' },
            { type: 'text', text: 'Hi' },
            { type: 'text', text: '  ' },
          ],
        },
        { role: 'assistant', content: '', tool_calls: [weatherCall('call_1')] },
        { role: 'tool', tool_call_id: 'call_1', content: '' },
        { role: 'user', content: '' },
        { role: 'assistant', content: 'Sunny. ' },
      ],
    });
    const texts = JSON.stringify(body.messages);
    assert.ok(!texts.includes('"text":""'));
    assert.deepEqual(body.messages, [
      { role: 'user', content: [{ type: 'text', text: 'Hi' }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1' }] },
      // A final assistant turn is a prefill, which Anthropic refuses with trailing whitespace.
      { role: 'assistant', content: [{ type: 'text', text: 'Sunny.' }] },
    ]);
  });

  it('puts assistant text before its tool_use blocks, parsing arguments safely (pitfall 6)', () => {
    const body = translate({
      messages: [
        { role: 'user', content: 'Weather in Paris and Rome?' },
        { role: 'assistant', content: 'Checking.', tool_calls: [weatherCall('call_a'), weatherCall('call_b', '{"city": "Ro')] },
        { role: 'tool', tool_call_id: 'call_a', content: '18C' },
        { role: 'tool', tool_call_id: 'call_b', content: '25C' },
      ],
    });
    const messages = body.messages as { role: string; content: unknown[] }[];
    assert.deepEqual(messages[1], {
      role: 'assistant',
      content: [
        { type: 'text', text: 'Checking.' },
        { type: 'tool_use', id: 'call_a', name: 'get_weather', input: { city: 'Paris' } },
        { type: 'tool_use', id: 'call_b', name: 'get_weather', input: {} },
      ],
    });
  });

  it('groups consecutive tool messages and the following user text into one user turn, results first (pitfall 1)', () => {
    const body = translate({
      messages: [
        { role: 'user', content: 'Weather in Paris and Rome?' },
        { role: 'assistant', content: null, tool_calls: [weatherCall('call_a'), weatherCall('call_b')] },
        { role: 'tool', tool_call_id: 'call_a', content: '18C' },
        { role: 'tool', tool_call_id: 'call_b', content: [{ type: 'text', text: '25C' }] },
        { role: 'user', content: 'And in Oslo?' },
      ],
    });
    const messages = body.messages as unknown[];
    assert.equal(messages.length, 3);
    assert.deepEqual(messages[2], {
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'call_a', content: '18C' },
        { type: 'tool_result', tool_use_id: 'call_b', content: [{ type: 'text', text: '25C' }] },
        { type: 'text', text: 'And in Oslo?' },
      ],
    });
  });

  it('gives orphaned tool calls placeholder results (pitfall 2)', () => {
    const body = translate({
      messages: [
        { role: 'user', content: 'Weather?' },
        { role: 'assistant', content: null, tool_calls: [weatherCall('call_a'), weatherCall('call_b')] },
        { role: 'tool', tool_call_id: 'call_a', content: '18C' },
        { role: 'assistant', content: null, tool_calls: [weatherCall('call_c')] },
        { role: 'user', content: 'Never mind.' },
      ],
    });
    assert.deepEqual(body.messages, [
      { role: 'user', content: [{ type: 'text', text: 'Weather?' }] },
      {
        role: 'assistant',
        content: [
          { type: 'tool_use', id: 'call_a', name: 'get_weather', input: { city: 'Paris' } },
          { type: 'tool_use', id: 'call_b', name: 'get_weather', input: { city: 'Paris' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'call_a', content: '18C' },
          { type: 'tool_result', tool_use_id: 'call_b', content: missingToolResultText },
        ],
      },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'call_c', name: 'get_weather', input: { city: 'Paris' } }] },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'call_c', content: missingToolResultText },
          { type: 'text', text: 'Never mind.' },
        ],
      },
    ]);
  });

  it('turns a tool result that answers no tool call into text instead of an invalid tool_result', () => {
    const body = translate({
      messages: [
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: 'Hello' },
        { role: 'tool', tool_call_id: 'call_zz', content: 'stale' },
      ],
    });
    assert.deepEqual((body.messages as unknown[])[2], {
      role: 'user',
      content: [{ type: 'text', text: 'Tool result for call_zz: stale' }],
    });
    // After the user's own text in the same turn, it stays after it: the order the client wrote.
    const after = translate({
      messages: [
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: 'Hello' },
        { role: 'user', content: 'and?' },
        { role: 'tool', tool_call_id: 'call_zz', content: 'stale' },
        { role: 'user', content: 'well?' },
      ],
    });
    assert.deepEqual((after.messages as unknown[])[2], {
      role: 'user',
      content: [
        { type: 'text', text: 'and?' },
        { type: 'text', text: 'Tool result for call_zz: stale' },
        { type: 'text', text: 'well?' },
      ],
    });
  });

  it('sanitises tool ids the same way on tool_use and tool_result (pitfall 5)', () => {
    const body = translate({
      messages: [
        { role: 'user', content: 'Weather?' },
        { role: 'assistant', content: null, tool_calls: [weatherCall('functions.get_weather:0')] },
        { role: 'tool', tool_call_id: 'functions.get_weather:0', content: '18C' },
      ],
    });
    const messages = body.messages as { content: { id?: string; tool_use_id?: string }[] }[];
    assert.match(messages[1]!.content[0]!.id!, /^functions_get_weather_0_[A-Za-z0-9_-]{8}$/);
    assert.equal(messages[2]!.content[0]!.tool_use_id, messages[1]!.content[0]!.id);
  });

  it('keeps two ids apart that differ only in replaced characters (c.1, c:1): both results stay paired', () => {
    const body = translate({
      messages: [
        { role: 'user', content: 'Weather?' },
        { role: 'assistant', content: null, tool_calls: [weatherCall('c.1'), weatherCall('c:1')] },
        { role: 'tool', tool_call_id: 'c.1', content: 'r1' },
        { role: 'tool', tool_call_id: 'c:1', content: 'r2' },
      ],
    });
    const messages = body.messages as { content: { type: string; id?: string; tool_use_id?: string }[] }[];
    const ids = messages[1]!.content.map((block) => block.id);
    assert.equal(new Set(ids).size, 2);
    assert.deepEqual(
      messages[2]!.content.map((block) => [block.type, block.tool_use_id]),
      [
        ['tool_result', ids[0]],
        ['tool_result', ids[1]],
      ],
    );
  });

  it('adds a minimal tool per name when the history uses tools and the client sent none (pitfall 3)', () => {
    const body = translate({
      messages: [
        { role: 'user', content: 'Weather?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [weatherCall('call_a'), { ...weatherCall('call_b'), function: { name: 'get_time', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'call_a', content: '18C' },
        { role: 'tool', tool_call_id: 'call_b', content: '12:00' },
      ],
    });
    assert.deepEqual(body.tools, [
      { name: 'get_weather', input_schema: { type: 'object', properties: {} } },
      { name: 'get_time', input_schema: { type: 'object', properties: {} } },
    ]);
    assert.equal(body.tool_choice, undefined);
  });

  it('maps tools and every tool_choice, parallel_tool_calls:false as disable_parallel_tool_use', () => {
    const tools = [
      {
        type: 'function',
        function: {
          name: 'get_weather',
          description: 'Weather now',
          parameters: { type: 'object', properties: { city: { type: 'string' } } },
        },
      },
      { type: 'function', function: { name: 'ping' } },
    ];
    const base = { messages: [{ role: 'user', content: 'Hi' }], tools };
    assert.deepEqual(translate(base).tools, [
      { name: 'get_weather', description: 'Weather now', input_schema: { type: 'object', properties: { city: { type: 'string' } } } },
      { name: 'ping', input_schema: { type: 'object', properties: {} } },
    ]);
    assert.equal(translate(base).tool_choice, undefined);
    assert.deepEqual(translate({ ...base, tool_choice: 'auto' }).tool_choice, { type: 'auto' });
    assert.deepEqual(translate({ ...base, tool_choice: 'required' }).tool_choice, { type: 'any' });
    assert.deepEqual(translate({ ...base, tool_choice: 'none' }).tool_choice, { type: 'none' });
    assert.deepEqual(translate({ ...base, tool_choice: { type: 'function', function: { name: 'ping' } } }).tool_choice, {
      type: 'tool',
      name: 'ping',
    });
    assert.deepEqual(translate({ ...base, parallel_tool_calls: false }).tool_choice, { type: 'auto', disable_parallel_tool_use: true });
    assert.deepEqual(translate({ ...base, tool_choice: 'required', parallel_tool_calls: false }).tool_choice, {
      type: 'any',
      disable_parallel_tool_use: true,
    });
    assert.deepEqual(translate({ ...base, tool_choice: 'none', parallel_tool_calls: false }).tool_choice, { type: 'none' });
  });

  it('refuses a json_schema whose root is not an object instead of answering "{}"', () => {
    assert.throws(
      () =>
        translate({
          messages: [{ role: 'user', content: 'List three colours' }],
          response_format: { type: 'json_schema', json_schema: { name: 'out', schema: { type: 'array', items: { type: 'string' } } } },
        }),
      (err: unknown) =>
        err instanceof ApiError && err.code === 'unsupported_parameter' && err.param === 'response_format.json_schema.schema',
    );
  });

  it('refuses a forced tool call with a JSON response_format instead of silently dropping the forced call', () => {
    const tools = [{ type: 'function' as const, function: { name: 'lookup', parameters: { type: 'object' } } }];
    for (const tool_choice of ['required', { type: 'function', function: { name: 'lookup' } }] as const) {
      assert.throws(
        () =>
          translate({ messages: [{ role: 'user', content: 'Look it up' }], tools, tool_choice, response_format: { type: 'json_object' } }),
        (err: unknown) => err instanceof ApiError && err.code === 'unsupported_parameter' && err.param === 'tool_choice',
      );
    }
  });

  it('emulates JSON mode with a forced json_tool_call tool', () => {
    const schema = { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] };
    const withSchema = translate({
      messages: [{ role: 'user', content: 'Answer as JSON' }],
      response_format: { type: 'json_schema', json_schema: { name: 'answer', schema } },
    });
    assert.deepEqual(withSchema.tools, [
      { name: 'json_tool_call', description: 'Respond with a JSON object matching the answer schema.', input_schema: schema },
    ]);
    assert.deepEqual(withSchema.tool_choice, { type: 'tool', name: 'json_tool_call' });

    const jsonObject = translate({
      messages: [{ role: 'user', content: 'Answer as JSON' }],
      response_format: { type: 'json_object' },
      tool_choice: 'auto',
    });
    assert.deepEqual(jsonObject.tools, [
      { name: 'json_tool_call', description: 'Respond with a JSON object.', input_schema: { type: 'object', additionalProperties: true } },
    ]);
    assert.deepEqual(jsonObject.tool_choice, { type: 'tool', name: 'json_tool_call' });

    const text = translate({ messages: [{ role: 'user', content: 'Hi' }], response_format: { type: 'text' } });
    assert.equal(text.tools, undefined);
  });

  it('refuses a conversation with nothing but system text', () => {
    rejects({ messages: [{ role: 'system', content: 'Be brief.' }] }, 'validation_error', 'messages');
  });
});
