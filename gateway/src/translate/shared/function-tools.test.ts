// OpenAI's tool kinds beyond functions (a custom tool, a tool_choice of custom or allowed_tools,
// the legacy function role) are valid chat requests: the OpenAI passthrough forwards them as sent,
// and each translation to another protocol refuses them naming the field — never drops them.
import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import { ApiError } from '../../../../core/errors/index.js';
import { chatCompletionRequest } from '../../interfaces/chat-completions/schema.js';
import type { SupplierProtocol } from '../../../../core/config/index.js';
import { createTranslator } from '../factory.js';
import { testContext } from './test-fixtures.js';

const grammarTool = { type: 'custom', custom: { name: 'grammar', description: 'free text', format: { type: 'text' } } };
const weather = { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: {} } } };
const shapes: { name: string; body: Record<string, unknown>; param: string }[] = [
  { name: 'a custom tool', body: { tools: [weather, grammarTool] }, param: 'tools[1]' },
  {
    name: 'a custom tool_choice',
    body: { tools: [grammarTool], tool_choice: { type: 'custom', custom: { name: 'grammar' } } },
    param: 'tools[0]',
  },
  {
    name: 'an allowed_tools tool_choice',
    body: {
      tools: [weather],
      tool_choice: {
        type: 'allowed_tools',
        allowed_tools: { mode: 'auto', tools: [{ type: 'function', function: { name: 'get_weather' } }] },
      },
    },
    param: 'tool_choice',
  },
  {
    // The next turn of a custom-tool conversation: the assistant's call and its result.
    name: 'a custom tool call in the history',
    body: {
      messages: [
        { role: 'user', content: 'write SQL' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_1', type: 'custom', custom: { name: 'grammar', input: 'SELECT 1' } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'ok' },
      ],
    },
    param: 'messages[1].tool_calls[0]',
  },
  {
    name: 'a legacy function-role message',
    body: {
      messages: [
        { role: 'user', content: 'weather?' },
        { role: 'function', name: 'get_weather', content: '{"sunny":true}' },
      ],
    },
    param: 'messages[1]',
  },
];

const request = (body: Record<string, unknown>) =>
  chatCompletionRequest.parse({ model: 'public-model', messages: [{ role: 'user', content: 'Hi' }], ...body });

describe('tool kinds beyond functions', () => {
  for (const shape of shapes) {
    it(`${shape.name}: valid, forwarded as sent to an OpenAI-protocol supplier, refused naming ${shape.param} elsewhere`, () => {
      const parsed = request(shape.body);
      const passed = createTranslator({ family: 'openai', body: parsed }, 'openai', testContext('openai')).request().body as Record<
        string,
        unknown
      >;
      for (const [field, value] of Object.entries(shape.body)) assert.deepEqual(passed[field], value, field);
      for (const protocol of ['anthropic', 'openai-responses'] as SupplierProtocol[])
        assert.throws(
          () => createTranslator({ family: 'openai', body: parsed }, protocol, testContext(protocol)).request(),
          (err: unknown) => err instanceof ApiError && err.code === 'unsupported_parameter' && err.param === shape.param,
          `${shape.name} toward ${protocol}`,
        );
    });
  }

  it('a forced custom tool must be defined in tools, as a forced function must', () => {
    const checked = chatCompletionRequest.safeParse({
      model: 'm',
      messages: [{ role: 'user', content: 'Hi' }],
      tools: [weather],
      tool_choice: { type: 'custom', custom: { name: 'grammar' } },
    });
    assert.equal(checked.error?.issues[0]?.message, 'names the tool "grammar", which "tools" does not define');
  });
});
