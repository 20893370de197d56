import { sanitizeToolId } from '../shared/tool-ids.js';
import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import { ApiError } from '../../../../core/errors/index.js';
import { messagesRequest } from '../../interfaces/messages/schema.js';
import type { AnthropicMessage } from '../../wire/anthropic-messages.js';
import type { OpenAiChatCompletion, OpenAiFinishReason } from '../../wire/openai-chat.js';
import { expectedMessageUsage, testContext } from '../shared/test-fixtures.js';
import { AnthropicToOpenAi } from './translator.js';

const longName = `mcp__${'x'.repeat(70)}__lookup`;

function translator(): AnthropicToOpenAi {
  const request = messagesRequest.parse({
    model: 'public-model',
    max_tokens: 100,
    messages: [{ role: 'user', content: 'Hi' }],
    tools: [{ name: longName, input_schema: { type: 'object' } }],
  });
  const t = new AnthropicToOpenAi(request, testContext('openai'));
  t.request();
  return t;
}

function completion(
  message: OpenAiChatCompletion['choices'][number]['message'],
  finish: OpenAiFinishReason | null,
  usage?: OpenAiChatCompletion['usage'],
): OpenAiChatCompletion {
  return {
    id: 'chatcmpl-up',
    object: 'chat.completion',
    created: 1,
    model: 'gpt-x',
    choices: [{ index: 0, message, logprobs: null, finish_reason: finish }],
    ...(usage && { usage }),
  };
}

describe('AnthropicToOpenAi.response', () => {
  it('builds an Anthropic message: text, then tool_use with restored names and safely parsed input', () => {
    const t = translator();
    const shortName = (t.request().body.tools as { function: { name: string } }[])[0]!.function.name;
    const out = t.response(
      completion(
        {
          role: 'assistant',
          content: 'Looking it up.',
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: shortName, arguments: '{"q":"cats"}' } },
            { id: 'call.2', type: 'function', function: { name: 'other', arguments: '{"q": "unterminated' } },
          ],
        },
        'tool_calls',
        { prompt_tokens: 120, completion_tokens: 9, total_tokens: 129, prompt_tokens_details: { cached_tokens: 100 } },
      ),
    ) as AnthropicMessage;
    assert.match(out.id, /^msg_[0-9a-f]{32}$/);
    assert.equal(out.type, 'message');
    assert.equal(out.role, 'assistant');
    assert.equal(out.model, 'public-model');
    assert.deepEqual(out.content, [
      { type: 'text', text: 'Looking it up.' },
      { type: 'tool_use', id: 'call_1', name: longName, input: { q: 'cats' } },
      { type: 'tool_use', id: sanitizeToolId('call.2'), name: 'other', input: {} },
    ]);
    assert.equal(out.stop_reason, 'tool_use');
    assert.equal(out.stop_sequence, null);
    assert.deepEqual(out.usage, expectedMessageUsage({ input: 20, output: 9, cacheRead: 100 }));
    assert.deepEqual(t.usage(), { inputTokens: 120, outputTokens: 9, cachedInputTokens: 100 });
  });

  it("a refusal is shown as text and ends the turn as Anthropic's refusal, as a content filter does", () => {
    const refused = translator().response(
      completion({ role: 'assistant', content: null, refusal: 'I cannot help with that.' }, 'stop'),
    ) as AnthropicMessage;
    assert.deepEqual(refused.content, [{ type: 'text', text: 'I cannot help with that.' }]);
    assert.equal(refused.stop_reason, 'refusal');
    const filtered = translator().response(completion({ role: 'assistant', content: 'Partial' }, 'content_filter')) as AnthropicMessage;
    assert.equal(filtered.stop_reason, 'refusal');
  });

  it('maps each finish reason and leaves out empty text', () => {
    const cases: [OpenAiFinishReason | null, string][] = [
      ['stop', 'end_turn'],
      ['length', 'max_tokens'],
      ['tool_calls', 'tool_use'],
      ['content_filter', 'refusal'],
      [null, 'end_turn'],
    ];
    for (const [finish, reason] of cases) {
      const out = translator().response(completion({ role: 'assistant', content: '' }, finish)) as AnthropicMessage;
      assert.equal(out.stop_reason, reason, String(finish));
      assert.deepEqual(out.content, []);
    }
  });

  it('throws an in-band error with the supplier code, invalid_backend_response for junk', () => {
    assert.throws(
      () => translator().response({ error: { message: 'Too many requests', type: 'requests', code: 'rate_limit_exceeded' } }),
      (err: unknown) => err instanceof ApiError && err.code === 'rate_limit_exceeded' && err.status === 429,
    );
    assert.throws(
      () => translator().response({ content: [] }),
      (err: unknown) => err instanceof ApiError && err.code === 'invalid_backend_response',
    );
    assert.throws(
      () => translator().response({ choices: [] }),
      (err: unknown) => err instanceof ApiError && err.code === 'invalid_backend_response',
    );
  });
});
