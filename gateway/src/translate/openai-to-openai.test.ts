import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import { ApiError } from '../../../core/errors/index.js';
import { chatCompletionRequest } from '../interfaces/chat-completions/schema.js';
import { messagesRequest } from '../interfaces/messages/schema.js';
import { AnthropicToAnthropic } from './anthropic-to-anthropic.js';
import { AnthropicToOpenAi } from './anthropic-to-openai/translator.js';
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

  it('chunks without id, object or created get them, one id for the whole stream; present ones are kept', () => {
    const t = translator();
    t.request();
    const bare = JSON.stringify({ choices: [{ index: 0, delta: { content: 'Hi' }, finish_reason: null }] });
    const frames = [t.streamEvent({ data: bare }), t.streamEvent({ data: bare })].map(
      (frame) => JSON.parse(frame.slice('data: '.length)) as { id: string; object: string; created: number },
    );
    assert.match(frames[0]!.id, /^chatcmpl-[0-9a-f]{32}$/);
    assert.equal(frames[1]!.id, frames[0]!.id);
    assert.equal(frames[0]!.object, 'chat.completion.chunk');
    assert.equal(typeof frames[0]!.created, 'number');
    const own = t.streamEvent({ data: JSON.stringify({ id: 'c9', object: 'chat.completion.chunk', created: 7, choices: [] }) });
    assert.equal(own, '');
    const kept = t.streamEvent({
      data: JSON.stringify({ id: 'c9', created: 7, choices: [{ index: 0, delta: { content: '!' }, finish_reason: 'stop' }] }),
    });
    assert.match(kept, /"id":"c9","created":7,.*"object":"chat.completion.chunk"/);
  });

  it('a whole answer without id, object or created gets them', () => {
    const t = new OpenAiToOpenAi(
      chatCompletionRequest.parse({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
      testContext('openai'),
    );
    const answer = t.response({ choices: [{ index: 0, message: { role: 'assistant', content: 'Hi' }, finish_reason: 'stop' }] }) as {
      id: string;
      object: string;
      created: number;
    };
    assert.match(answer.id, /^chatcmpl-/);
    assert.equal(answer.object, 'chat.completion');
    assert.equal(typeof answer.created, 'number');
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

  it('a stream without [DONE] is whole once every choice it carried finished, and cut before that', () => {
    const twoChoices = () =>
      new OpenAiToOpenAi(
        chatCompletionRequest.parse({ model: 'm', stream: true, n: 2, messages: [{ role: 'user', content: 'hi' }] }),
        testContext('openai'),
      );
    const chunk = (index: number, finish: string | null) =>
      JSON.stringify({
        id: 'c',
        object: 'chat.completion.chunk',
        created: 1,
        model: 'u',
        choices: [{ index, delta: { content: 'x' }, finish_reason: finish }],
      });
    // Choice 0 finished, choice 1 still being written when the connection dropped.
    const cut = twoChoices();
    for (const data of [chunk(0, null), chunk(0, 'stop'), chunk(1, null)]) cut.streamEvent({ data });
    assert.throws(
      () => cut.streamEnd(),
      (err: unknown) => err instanceof ApiError && err.code === 'stream_interrupted',
    );
    // A supplier that ignores n: its one choice finished is a whole answer.
    const ignoresN = twoChoices();
    ignoresN.streamEvent({ data: chunk(0, 'stop') });
    assert.equal(ignoresN.streamEnd(), 'data: [DONE]\n\n');
    const whole = twoChoices();
    for (const data of [chunk(0, 'stop'), chunk(1, null), chunk(1, 'length')]) whole.streamEvent({ data });
    assert.equal(whole.streamEnd(), 'data: [DONE]\n\n');
  });

  const usageClient = () =>
    new OpenAiToOpenAi(
      chatCompletionRequest.parse({
        model: 'm',
        stream: true,
        stream_options: { include_usage: true },
        messages: [{ role: 'user', content: 'hi' }],
      }),
      testContext('openai'),
    );
  const content = {
    id: 'c7',
    object: 'chat.completion.chunk',
    created: 5,
    model: 'u',
    choices: [{ index: 0, delta: { content: 'Hi' }, finish_reason: 'stop' }],
  };
  const charged = {
    usage: { inputTokens: 9, outputTokens: 2, cachedInputTokens: 0 },
    totals: { input_tokens: 9, output_tokens: 2, cost_usd: '0.000011' },
  };

  it('a client asking for usage gets a usage chunk with the charged usage when the supplier sent none', () => {
    const t = usageClient();
    t.streamEvent({ data: JSON.stringify(content) });
    assert.equal(t.streamEvent({ data: '[DONE]' }), '', '[DONE] waits for the usage chunk');
    assert.equal(t.streamEnd(), '');
    const closing = t.streamClose(charged);
    const [usageFrame, done] = closing.split('\n\n').filter(Boolean);
    assert.equal(done, 'data: [DONE]');
    const chunk = JSON.parse(usageFrame!.slice('data: '.length)) as Record<string, unknown>;
    assert.equal(chunk.id, 'c7');
    assert.equal(chunk.created, 5);
    assert.equal(chunk.model, 'public-model');
    assert.deepEqual(chunk.choices, []);
    assert.deepEqual(chunk.usage, {
      prompt_tokens: 9,
      completion_tokens: 2,
      total_tokens: 11,
      prompt_tokens_details: { cached_tokens: 0 },
    });
    assert.deepEqual(chunk.svc, charged.totals);
    assert.equal(t.streamClose(charged), '', 'written once');
  });

  it("a usage chunk missing a side leaves with the charged usage; one that is complete passes as the supplier's", () => {
    const t = usageClient();
    t.streamEvent({ data: JSON.stringify(content) });
    const partial = {
      id: 'c7',
      object: 'chat.completion.chunk',
      created: 5,
      model: 'u',
      choices: [],
      usage: { prompt_tokens: 0, completion_tokens: 2, total_tokens: 2 },
    };
    assert.equal(t.streamEvent({ data: JSON.stringify(partial) }), '');
    assert.equal(t.streamEvent({ data: '[DONE]' }), '');
    assert.match(t.streamClose(charged), /"prompt_tokens":9,"completion_tokens":2,"total_tokens":11/);

    const whole = usageClient();
    whole.streamEvent({ data: JSON.stringify(content) });
    const complete = { ...partial, usage: { prompt_tokens: 4, completion_tokens: 2, total_tokens: 6 } };
    assert.match(whole.streamEvent({ data: JSON.stringify(complete) }), /"prompt_tokens":4/);
    assert.equal(whole.streamEvent({ data: '[DONE]' }), 'data: [DONE]\n\n');
    assert.equal(whole.streamClose(charged), '');

    // A partial usage chunk, then a complete one: the complete one is the usage chunk, sent once.
    const late = usageClient();
    late.streamEvent({ data: JSON.stringify(content) });
    assert.equal(late.streamEvent({ data: JSON.stringify(partial) }), '');
    assert.match(late.streamEvent({ data: JSON.stringify(complete) }), /"prompt_tokens":4/);
    assert.equal(late.streamEvent({ data: '[DONE]' }), 'data: [DONE]\n\n');
    assert.equal(late.streamClose(charged), '', 'no second usage chunk, no second [DONE]');
  });

  it('a client that did not ask for usage gets [DONE] at once, whatever the supplier sent', () => {
    const t = translator();
    t.streamEvent({ data: JSON.stringify(content) });
    assert.equal(t.streamEvent({ data: '[DONE]' }), 'data: [DONE]\n\n');
    assert.equal(t.streamClose(charged), '');
  });
});

describe('answers that are not answers, read alike on every lane', () => {
  it('an error body with a 200 is the supplier error with its code; no choice is invalid_backend_response', () => {
    assert.throws(
      () => translator().response({ error: { message: 'Upstream model overloaded', type: 'server_error', code: 'overloaded' } }),
      (err: unknown) => err instanceof ApiError && err.code === 'overloaded',
    );
    assert.throws(
      () => translator().response({ id: 'c', choices: [], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }),
      (err: unknown) => err instanceof ApiError && err.code === 'invalid_backend_response',
    );
  });

  it('toward an Anthropic client: text parts are joined, content of another type is not an answer', () => {
    const anthropic = () => {
      const t = new AnthropicToOpenAi(
        messagesRequest.parse({ model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }),
        testContext('openai'),
      );
      t.request();
      return t;
    };
    const completion = (content: unknown) => ({
      id: 'c',
      choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
    });
    assert.deepEqual(
      (
        anthropic().response(
          completion([
            { type: 'text', text: 'He' },
            { type: 'text', text: 'llo' },
          ]),
        ) as { content: unknown }
      ).content,
      [{ type: 'text', text: 'Hello' }],
    );
    assert.throws(
      () => anthropic().response(completion(['a'])),
      (err: unknown) => err instanceof ApiError && err.code === 'invalid_backend_response',
    );
  });

  it('an Anthropic passthrough reads a 200 error body as the supplier error', () => {
    const t = new AnthropicToAnthropic(
      messagesRequest.parse({ model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }),
      testContext('anthropic'),
    );
    assert.throws(
      () => t.response({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }),
      (err: unknown) => err instanceof ApiError && err.code === 'overloaded_error',
    );
  });
});
