import { describe, expect, test } from 'vitest';
import { answerItems } from './answer-items.js';
import { chatItems } from './chat-items.js';
import { imageTokenEstimate, perMessageTokens } from './count.js';

const all = (items: Iterable<unknown>) => [...items];

describe('answerItems: what a supplier answered, for counting its output', () => {
  test('an OpenAI completion: text, refusal, reasoning text and tool calls', () => {
    const whole = {
      choices: [
        {
          message: {
            content: 'hello',
            refusal: null,
            reasoning_content: 'thought',
            tool_calls: [{ id: 'c', type: 'function', function: { name: 'get', arguments: '{"a":1}' } }],
          },
        },
      ],
    };
    expect(all(answerItems('openai-chat', { whole, events: [] }))).toEqual(['hello', 'thought', 'get', '{"a":1}']);
  });

  test('OpenAI stream chunks in order; [DONE], unparsable frames and wrong types count nothing', () => {
    const events = [
      JSON.stringify({ choices: [{ delta: { role: 'assistant', content: 'hel' } }] }),
      JSON.stringify({ choices: [{ delta: { content: 'lo' } }] }),
      JSON.stringify({ choices: [{ delta: { tool_calls: [{ index: 0, function: { name: 'get', arguments: '{' } }] } }] }),
      JSON.stringify({ choices: [{ delta: { content: 42 } }], usage: null }),
      JSON.stringify({ choices: 'nope' }),
      'not json',
      '[DONE]',
    ];
    expect(all(answerItems('openai-chat', { events }))).toEqual(['hel', 'lo', 'get', '{']);
  });

  test('an Anthropic message and its stream events: text, thinking, tool name and input', () => {
    const whole = {
      content: [
        { type: 'thinking', thinking: 'hmm', signature: 's' },
        { type: 'text', text: 'hi' },
        { type: 'tool_use', id: 't', name: 'get', input: { a: 1 } },
      ],
    };
    expect(all(answerItems('anthropic', { whole, events: [] }))).toEqual(['hmm', 'hi', 'get', '{"a":1}']);
    const events = [
      JSON.stringify({ type: 'message_start', message: { content: [], usage: {} } }),
      JSON.stringify({ type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 't', name: 'get', input: {} } }),
      JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"a":' } }),
      JSON.stringify({ type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'yes' } }),
      JSON.stringify({ type: 'content_block_delta', index: 2, delta: { type: 'signature_delta', signature: 'sig' } }),
      JSON.stringify({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 0 } }),
    ];
    expect(all(answerItems('anthropic', { events }))).toEqual(['get', '{"a":', 'yes']);
  });
});

describe('chatItems: what an OpenAI chat request is made of, for counting its input', () => {
  test('messages with framing, text parts, media estimates, tool calls, tools and the response schema', () => {
    const tools = [{ type: 'function' as const, function: { name: 'get', parameters: { type: 'object' } } }];
    const schema = { name: 's', schema: { type: 'object' } };
    const items = all(
      chatItems({
        model: 'm',
        messages: [
          { role: 'system', content: 'be brief' },
          {
            role: 'user',
            content: [
              { type: 'text', text: 'look' },
              { type: 'image_url', image_url: { url: 'https://example.com/a.png' } },
            ],
          },
          { role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'get', arguments: '{}' } }] },
          { role: 'tool', tool_call_id: 'c', content: 'done' },
        ],
        tools,
        response_format: { type: 'json_schema', json_schema: schema },
      }),
    );
    expect(items).toEqual([
      perMessageTokens,
      'be brief',
      perMessageTokens,
      'look',
      imageTokenEstimate,
      perMessageTokens,
      'get',
      '{}',
      perMessageTokens,
      'done',
      JSON.stringify(tools),
      JSON.stringify(schema),
    ]);
  });
});
