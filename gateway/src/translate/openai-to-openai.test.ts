import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import { ApiError } from '../../../core/errors/index.js';
import { chatCompletionRequest } from '../interfaces/chat-completions/schema.js';
import { OpenAiToOpenAi } from './openai-to-openai.js';
import { testContext } from './shared/test-fixtures.js';

const translator = () =>
  new OpenAiToOpenAi(
    chatCompletionRequest.parse({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    testContext('openai'),
  );

describe('OpenAI chat passthrough streams', () => {
  it('a stream of [DONE] alone is empty_stream, so it fails over instead of answering an empty 200', () => {
    assert.throws(
      () => translator().streamEvent({ data: '[DONE]' }),
      (err: unknown) => err instanceof ApiError && err.code === 'empty_stream' && err.status === 502,
    );
  });

  it('a stream with a chunk before [DONE] ends normally', () => {
    const t = translator();
    t.request();
    const chunk = {
      id: 'c',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'u',
      choices: [{ index: 0, delta: { content: 'Hi' }, finish_reason: 'stop' }],
    };
    assert.match(t.streamEvent({ data: JSON.stringify(chunk) }), /"content":"Hi"/);
    assert.equal(t.streamEvent({ data: '[DONE]' }), 'data: [DONE]\n\n');
    assert.equal(t.streamEnd(), '');
  });
});
