import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import { ApiError } from '../../../../core/errors/index.js';
import { chatCompletionRequest, maxChatTools } from '../../interfaces/chat-completions/schema.js';
import { messagesRequest } from '../../interfaces/messages/schema.js';
import { testContext } from '../shared/test-fixtures.js';
import { shortenToolName } from './tool-names.js';
import { AnthropicToOpenAi } from './translator.js';

/** Validates like the interface does, translates, and checks the result against the chat schema. */
function translate(raw: Record<string, unknown>): Record<string, unknown> {
  const request = messagesRequest.parse({ model: 'public-model', max_tokens: 256, ...raw });
  const call = new AnthropicToOpenAi(request, testContext('openai')).request();
  assert.equal(call.path, '/chat/completions');
  chatCompletionRequest.parse(call.body);
  return call.body;
}

const weatherUse = (id: string) => ({ type: 'tool_use', id, name: 'get_weather', input: { city: 'Paris' } });

describe('AnthropicToOpenAi.request', () => {
  it('sends the output limit in the field the model takes: max_tokens, or max_completion_tokens for reasoning models', () => {
    const request = messagesRequest.parse({ model: 'public-model', max_tokens: 321, messages: [{ role: 'user', content: 'Hi' }] });
    const plain = new AnthropicToOpenAi(request, testContext('openai')).request().body as Record<string, unknown>;
    assert.deepEqual([plain.max_tokens, plain.max_completion_tokens], [321, undefined]);
    const context = testContext('openai');
    const reasoning = {
      ...context,
      route: { ...context.route, model: { ...context.route.model, outputLimitField: 'max_completion_tokens' as const } },
    };
    const body = new AnthropicToOpenAi(request, reasoning).request().body as Record<string, unknown>;
    assert.deepEqual([body.max_tokens, body.max_completion_tokens], [undefined, 321]);
  });

  it('refuses a field it does not carry when it asks for something, naming it', () => {
    const messages = [{ role: 'user', content: 'Hi' }];
    for (const [field, value] of [
      ['mcp_servers', [{ type: 'url', url: 'https://mcp.example.com', name: 'x' }]],
      ['container', 'container_1'],
      ['context_management', { edits: [{ type: 'clear_tool_uses_20250919' }] }],
    ] as const)
      assert.throws(
        () => translate({ messages, [field]: value }),
        (err: unknown) => err instanceof ApiError && err.code === 'unsupported_parameter' && err.param === field,
        field,
      );
    assert.throws(
      () => translate({ messages, speed: 'fast' }),
      (err: unknown) => err instanceof ApiError && err.code === 'unsupported_parameter' && err.param === 'speed',
    );
    // Empty values ask for nothing; top_k, thinking, service_tier, a top-level cache_control and the
    // default speed are left out as documented.
    const body = translate({
      messages,
      mcp_servers: [],
      top_k: 5,
      thinking: { type: 'enabled', budget_tokens: 2048 },
      service_tier: 'auto',
      cache_control: { type: 'ephemeral' },
      speed: 'standard',
    });
    for (const left of ['mcp_servers', 'top_k', 'thinking', 'service_tier', 'cache_control', 'speed'])
      assert.equal(body[left], undefined, left);
  });

  it("carries output_config's JSON schema as a strict response_format, leaves its effort out, refuses other formats", () => {
    const messages = [{ role: 'user', content: 'Rate it' }];
    const schema = { type: 'object', properties: { stars: { type: 'integer' } }, required: ['stars'], additionalProperties: false };
    const body = translate({ messages, output_config: { format: { type: 'json_schema', schema }, effort: 'high' } });
    assert.deepEqual(body.response_format, { type: 'json_schema', json_schema: { name: 'output', schema, strict: true } });
    assert.equal(body.reasoning_effort, undefined);
    // A schema OpenAI's strict mode refuses (an optional property, an open object) goes without strict.
    const optional = { type: 'object', properties: { stars: { type: 'integer' }, note: { type: 'string' } }, required: ['stars'] };
    const loose = translate({ messages, output_config: { format: { type: 'json_schema', schema: optional } } });
    assert.deepEqual(loose.response_format, { type: 'json_schema', json_schema: { name: 'output', schema: optional, strict: false } });
    const nested = { ...schema, properties: { stars: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] } } };
    assert.equal(
      (
        translate({ messages, output_config: { format: { type: 'json_schema', schema: nested } } }).response_format as {
          json_schema: { strict: boolean };
        }
      ).json_schema.strict,
      false,
    );
    // Only an effort, or nothing: no format asked for.
    assert.equal(translate({ messages, output_config: { effort: 'low' } }).response_format, undefined);
    assert.equal(translate({ messages, output_config: { format: null } }).response_format, undefined);
    for (const [outputConfig, param] of [
      [{ format: { type: 'xml' } }, 'output_config.format'],
      [{ format: { type: 'json_schema' } }, 'output_config.format'],
      ['json', 'output_config'],
      [{ verbosity: 'low' }, 'output_config.verbosity'],
    ] as const)
      assert.throws(
        () => translate({ messages, output_config: outputConfig }),
        (err: unknown) => err instanceof ApiError && err.param === param && err.status === 400,
        param,
      );
  });

  it('maps the top-level fields and drops what OpenAI has no place for', () => {
    const body = translate({
      system: 'Be brief.',
      messages: [{ role: 'user', content: 'Hi' }],
      temperature: 0.3,
      top_p: 0.8,
      top_k: 40,
      stop_sequences: ['END', 'STOP'],
      metadata: { user_id: 'user-42', session_id: 's1', sticky_key: 'k' },
      thinking: { type: 'enabled', budget_tokens: 2048 },
      region: 'EU',
      stream: true,
    });
    assert.deepEqual(body, {
      model: 'upstream-model-1',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi' },
      ],
      max_tokens: 256,
      stop: ['END', 'STOP'],
      temperature: 0.3,
      top_p: 0.8,
      user: 'user-42',
      stream: true,
      stream_options: { include_usage: true },
    });
  });

  it('joins system text blocks into the first system message', () => {
    const body = translate({
      system: [
        { type: 'text', text: 'You are a helper.', cache_control: { type: 'ephemeral' } },
        { type: 'text', text: 'Answer in French.' },
      ],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }],
    });
    assert.deepEqual(body.messages, [
      { role: 'system', content: 'You are a helper.\n\nAnswer in French.' },
      { role: 'user', content: 'Hi' },
    ]);
  });

  it('rejects more than four stop sequences on stop_sequences', () => {
    assert.throws(
      () => translate({ messages: [{ role: 'user', content: 'Hi' }], stop_sequences: ['a', 'b', 'c', 'd', 'e'] }),
      (err: unknown) => err instanceof ApiError && err.code === 'unsupported_parameter' && err.param === 'stop_sequences',
    );
  });

  it('refuses more tools than OpenAI takes, naming the field, and passes exactly that many', () => {
    const tools = (n: number) =>
      Array.from({ length: n }, (_, i) => ({ name: `tool_${i}`, input_schema: { type: 'object', properties: {} } }));
    assert.throws(
      () => translate({ messages: [{ role: 'user', content: 'Hi' }], tools: tools(maxChatTools + 1) }),
      (err: unknown) =>
        err instanceof ApiError &&
        err.code === 'unsupported_parameter' &&
        err.param === 'tools' &&
        /at most 128 tools; 129/.test(err.message),
    );
    assert.equal(
      (translate({ messages: [{ role: 'user', content: 'Hi' }], tools: tools(maxChatTools) }).tools as unknown[]).length,
      maxChatTools,
    );
  });

  it('turns images into image_url parts and base64 PDFs into file parts', () => {
    const body = translate({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
            { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
            { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0x' } },
            { type: 'text', text: 'What are these?' },
          ],
        },
      ],
    });
    assert.deepEqual(body.messages, [
      {
        role: 'user',
        content: [
          { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
          { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg' } },
          { type: 'file', file: { filename: 'document.pdf', file_data: 'data:application/pdf;base64,JVBERi0x' } },
          { type: 'text', text: 'What are these?' },
        ],
      },
    ]);
  });

  it('sends assistant text and tool_use as content and tool_calls, dropping thinking', () => {
    const body = translate({
      messages: [
        { role: 'user', content: 'Weather?' },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'The user wants weather', signature: 'sig' },
            { type: 'redacted_thinking', data: 'xxx' },
            { type: 'text', text: 'Checking.' },
            weatherUse('toolu_1'),
          ],
        },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '18C' }] },
      ],
    });
    assert.deepEqual((body.messages as unknown[])[1], {
      role: 'assistant',
      content: 'Checking.',
      tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
    });
  });

  it('places tool results as tool messages before the remaining user text (pitfall 1), is_error prefixed', () => {
    const body = translate({
      messages: [
        { role: 'user', content: 'Weather in Paris and Rome?' },
        { role: 'assistant', content: [weatherUse('toolu_a'), weatherUse('toolu_b')] },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Here are the results.' },
            {
              type: 'tool_result',
              tool_use_id: 'toolu_a',
              content: [
                { type: 'text', text: '18C' },
                { type: 'text', text: 'sunny' },
              ],
            },
            { type: 'tool_result', tool_use_id: 'toolu_b', content: 'service down', is_error: true },
          ],
        },
      ],
    });
    assert.deepEqual((body.messages as unknown[]).slice(1), [
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'toolu_a', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
          { id: 'toolu_b', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'toolu_a', content: '18C\nsunny' },
      { role: 'tool', tool_call_id: 'toolu_b', content: 'Error: service down' },
      { role: 'user', content: 'Here are the results.' },
    ]);
  });

  it('moves images from tool results to a trailing user message', () => {
    const body = translate({
      messages: [
        { role: 'user', content: 'Screenshot please' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_s', name: 'screenshot', input: {} }] },
        {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: 'toolu_s',
              content: [
                { type: 'text', text: 'Captured' },
                { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: '/9j/4AAQ' } },
              ],
            },
          ],
        },
      ],
    });
    assert.deepEqual((body.messages as unknown[]).slice(2), [
      { role: 'tool', tool_call_id: 'toolu_s', content: 'Captured' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Attachments returned by tool call toolu_s:' },
          { type: 'image_url', image_url: { url: 'data:image/jpeg;base64,/9j/4AAQ' } },
        ],
      },
    ]);
  });

  it('sanitises ids the same way on tool_calls and tool messages (pitfall 5)', () => {
    const body = translate({
      messages: [
        { role: 'user', content: 'Weather?' },
        { role: 'assistant', content: [weatherUse('call.1:x')] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call.1:x', content: '18C' }] },
      ],
    });
    const messages = body.messages as { tool_calls?: { id: string }[]; tool_call_id?: string }[];
    assert.match(messages[1]!.tool_calls![0]!.id, /^call_1_x_[A-Za-z0-9_-]{8}$/);
    assert.equal(messages[2]!.tool_call_id, messages[1]!.tool_calls![0]!.id);
  });

  it('maps tools and every tool_choice, disable_parallel_tool_use as parallel_tool_calls:false', () => {
    const tools = [
      { name: 'get_weather', description: 'Weather now', input_schema: { type: 'object', properties: { city: { type: 'string' } } } },
    ];
    const base = { messages: [{ role: 'user', content: 'Hi' }], tools };
    assert.deepEqual(translate(base).tools, [
      { type: 'function', function: { name: 'get_weather', description: 'Weather now', parameters: tools[0]!.input_schema } },
    ]);
    assert.equal(translate({ ...base, tool_choice: { type: 'auto' } }).tool_choice, 'auto');
    assert.equal(translate({ ...base, tool_choice: { type: 'any' } }).tool_choice, 'required');
    assert.equal(translate({ ...base, tool_choice: { type: 'none' } }).tool_choice, 'none');
    assert.deepEqual(translate({ ...base, tool_choice: { type: 'tool', name: 'get_weather' } }).tool_choice, {
      type: 'function',
      function: { name: 'get_weather' },
    });
    const serial = translate({ ...base, tool_choice: { type: 'auto', disable_parallel_tool_use: true } });
    assert.equal(serial.parallel_tool_calls, false);
    assert.equal(translate({ ...base, tool_choice: { type: 'auto' } }).parallel_tool_calls, undefined);
  });

  it('shortens tool names longer than 64 characters the same way in tools, history and tool_choice', () => {
    const long = `mcp__${'very_long_server_name_'.repeat(4)}__search_documents`;
    assert.ok(long.length > 64);
    const short = shortenToolName(long);
    assert.match(short, /^[a-zA-Z0-9_-]{1,64}$/);
    assert.equal(short, shortenToolName(long));
    assert.notEqual(shortenToolName(`${long}_2`), short);
    const body = translate({
      messages: [
        { role: 'user', content: 'Search' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: long, input: { q: 'x' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'found' }] },
      ],
      tools: [{ name: long, input_schema: { type: 'object' } }],
      tool_choice: { type: 'tool', name: long },
    });
    const tools = body.tools as { function: { name: string } }[];
    assert.equal(tools[0]!.function.name, short);
    assert.deepEqual(body.tool_choice, { type: 'function', function: { name: short } });
    const messages = body.messages as { tool_calls?: { function: { name: string } }[] }[];
    assert.equal(messages[1]!.tool_calls![0]!.function.name, short);
  });

  describe('tool calls and results paired as OpenAI requires (rule 2)', () => {
    const toolUse = (id: string) => ({ type: 'tool_use', id, name: 'get_weather', input: { city: 'Paris' } });
    const result = (id: string, content: string) => ({ type: 'tool_result', tool_use_id: id, content });

    it('a result answering no call becomes user text, never a bare tool message', () => {
      const body = translate({ messages: [{ role: 'user', content: [result('toolu_zz', 'res')] }] });
      assert.deepEqual(body.messages, [{ role: 'user', content: 'Tool result for toolu_zz: res' }]);
    });

    it('a call left unanswered gets a placeholder result before the next message', () => {
      const body = translate({
        messages: [
          { role: 'user', content: 'Weather?' },
          { role: 'assistant', content: [toolUse('toolu_a'), toolUse('toolu_b')] },
          { role: 'user', content: [result('toolu_a', '18C'), { type: 'text', text: 'go on' }] },
        ],
      });
      assert.deepEqual(
        (body.messages as Record<string, unknown>[]).map((m) => [m.role, m.tool_call_id ?? null, m.content]),
        [
          ['user', null, 'Weather?'],
          ['assistant', null, null],
          ['tool', 'toolu_a', '18C'],
          ['tool', 'toolu_b', 'No result was provided for this tool call.'],
          ['user', null, 'go on'],
        ],
      );
    });

    it('a result answering a call of an earlier turn, or answering twice, becomes user text', () => {
      const body = translate({
        messages: [
          { role: 'user', content: 'Weather?' },
          { role: 'assistant', content: [toolUse('toolu_a')] },
          { role: 'user', content: [result('toolu_a', '18C'), result('toolu_a', 'again')] },
          { role: 'assistant', content: 'It is 18C.' },
          { role: 'user', content: [result('toolu_a', 'late')] },
        ],
      });
      assert.deepEqual(
        (body.messages as Record<string, unknown>[]).map((m) => [m.role, m.content]),
        [
          ['user', 'Weather?'],
          ['assistant', null],
          ['tool', '18C'],
          ['user', 'Tool result for toolu_a: again'],
          ['assistant', 'It is 18C.'],
          ['user', 'Tool result for toolu_a: late'],
        ],
      );
    });
  });
});

describe('a thread (the conversation kept by Anthropic) toward an OpenAI-protocol supplier', () => {
  it('is refused with the code the Anthropic SDK reads as "send the whole conversation", never dropped', () => {
    assert.throws(
      () => translate({ thread: { type: 'continue', previous_message_id: 'msg_1' }, messages: [{ role: 'user', content: 'next' }] }),
      (err: unknown) =>
        err instanceof ApiError &&
        err.status === 400 &&
        err.code === 'thread_unsupported_request' &&
        err.param === 'thread' &&
        JSON.stringify(err.details) === JSON.stringify({ unsupported: ['thread'] }),
    );
  });

  it('is left out when it asks for nothing (null, false, "", [], {}), as any field that asks for nothing', () => {
    for (const thread of [null, false, '', [], {}]) {
      const body = translate({ thread, messages: [{ role: 'user', content: 'hi' }] });
      assert.equal(body.thread, undefined, `thread ${JSON.stringify(thread)} is not forwarded`);
      assert.deepEqual(body.messages, [{ role: 'user', content: 'hi' }], `thread ${JSON.stringify(thread)}`);
    }
  });
});

// Outside probe: a turn of 80,000 tool calls took 12 s of the serving thread, and a strict schema
// of 100,000 required properties 21 s — a list look-up per result or per property (quadratic), while
// every other request waited. Sized so the quadratic versions take minutes: the timeout is a
// ceiling for a hang, not a measurement (linear, each takes well under a second here).
describe('AnthropicToOpenAi.request on very large requests', () => {
  const n = 150_000;

  it(`pairs ${n} tool calls with their results in one pass`, { timeout: 30_000 }, () => {
    const ids = Array.from({ length: n }, (_, i) => `toolu_${i}`);
    const body = translate({
      tools: [{ name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }],
      messages: [
        { role: 'user', content: 'Weather everywhere?' },
        { role: 'assistant', content: ids.map(weatherUse) },
        // Answered in reverse, the last one twice (then user text), the first not at all (a placeholder).
        {
          role: 'user',
          content: [...ids.slice(1).reverse(), ids.at(-1)!].map((id) => ({ type: 'tool_result', tool_use_id: id, content: 'Sunny' })),
        },
      ],
    });
    const messages = body.messages as { role: string; tool_call_id?: string; content?: unknown }[];
    const tools = messages.filter((m) => m.role === 'tool');
    assert.equal(tools.length, n);
    assert.equal(tools.at(-1)?.tool_call_id, 'toolu_0');
    assert.equal(messages.filter((m) => m.role === 'user').length, 2);
  });

  it(`reads a strict schema of ${n} required properties in one pass`, { timeout: 30_000 }, () => {
    const names = Array.from({ length: n }, (_, i) => `field_${i}`);
    const schema = {
      type: 'object',
      properties: Object.fromEntries(names.map((name) => [name, { type: 'string' }])),
      required: [...names].reverse(),
      additionalProperties: false,
    };
    const body = translate({
      messages: [{ role: 'user', content: 'Fill it' }],
      output_config: { format: { type: 'json_schema', schema } },
    });
    assert.equal((body.response_format as { json_schema: { strict?: boolean } }).json_schema.strict, true);
  });
});
