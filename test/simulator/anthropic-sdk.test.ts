// Wire fidelity of the Anthropic-format endpoints, proven with the official `@anthropic-ai/sdk`.
import assert from 'node:assert/strict';
import { afterAll, beforeAll, describe, test } from 'vitest';
import Anthropic from '@anthropic-ai/sdk';
import type { Tool } from '@anthropic-ai/sdk/resources/messages';
import { type RunningSimulator, startSimulator } from './server.js';

let sim: RunningSimulator;
let client: Anthropic;

beforeAll(async () => {
  sim = await startSimulator({ name: 'anthropic-sdk' });
  client = new Anthropic({ baseURL: sim.url, apiKey: 'x', maxRetries: 0 });
});
afterAll(() => sim.close());

const lookup: Tool = {
  name: 'lookup',
  description: 'Look something up',
  input_schema: { type: 'object', properties: { query: { type: 'string' }, limit: { type: 'integer' } }, required: ['query', 'limit'] },
};
const save: Tool = { name: 'save', input_schema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] } };

describe('messages', () => {
  test('create: text block, end_turn, echoed model, usage equals count_tokens', async () => {
    const params = {
      model: 'claude-sonnet-4-6',
      system: 'You are terse.',
      messages: [{ role: 'user' as const, content: 'Hello Claude, are you there?' }],
    };
    const { data: msg, response } = await client.messages.create({ ...params, max_tokens: 200 }).withResponse();
    assert.equal(response.headers.get('x-sim-instance'), 'anthropic-sdk');
    assert.ok(response.headers.get('request-id'));
    assert.match(msg.id, /^msg_/);
    assert.equal(msg.model, 'claude-sonnet-4-6');
    assert.equal(msg.stop_reason, 'end_turn');
    const block = msg.content[0];
    assert.ok(block?.type === 'text');
    assert.match(block.text, /^Simulated reply to: Hello Claude, are you there\?/);
    const count = await client.messages.countTokens(params);
    assert.equal(msg.usage.input_tokens, count.input_tokens);
    assert.ok(msg.usage.output_tokens > 0);
  });

  test('stream: finalMessage equals the non-streamed message; events in order', async () => {
    const params = { model: 'claude-haiku-4-5', max_tokens: 100, messages: [{ role: 'user' as const, content: 'Stream this please' }] };
    const plain = await client.messages.create(params);
    const stream = client.messages.stream(params);
    const types: string[] = [];
    stream.on('streamEvent', (ev) => types.push(ev.type));
    const final = await stream.finalMessage();
    assert.deepEqual(final.content, plain.content);
    assert.deepEqual(final.usage.output_tokens, plain.usage.output_tokens);
    assert.equal(final.usage.input_tokens, plain.usage.input_tokens);
    assert.equal(final.stop_reason, 'end_turn');
    assert.equal(types[0], 'message_start');
    assert.equal(types[1], 'content_block_start');
    assert.deepEqual(types.slice(-3), ['content_block_stop', 'message_delta', 'message_stop']);
  });

  test('tool_use streamed: the SDK parses input_json_delta fragments (auto: text then tool)', async () => {
    const final = await client.messages
      .stream({ model: 'c', max_tokens: 300, tools: [lookup, save], messages: [{ role: 'user', content: 'find cats' }] })
      .finalMessage();
    assert.equal(final.stop_reason, 'tool_use');
    assert.deepEqual(
      final.content.map((b) => b.type),
      ['text', 'tool_use'],
    );
    const tool = final.content[1];
    assert.ok(tool?.type === 'tool_use');
    assert.match(tool.id, /^toolu_/);
    assert.equal(tool.name, 'lookup');
    assert.deepEqual(tool.input, { query: 'sim-query', limit: 1 });
  });

  test('tool_choice any → two parallel tool_use blocks; tool → named; none and tool_result → text', async () => {
    const base = { model: 'c', max_tokens: 300, tools: [lookup, save], messages: [{ role: 'user' as const, content: 'go' }] };
    const any = await client.messages.stream({ ...base, tool_choice: { type: 'any' } }).finalMessage();
    assert.deepEqual(
      any.content.map((b) => (b.type === 'tool_use' ? b.name : b.type)),
      ['lookup', 'save'],
    );
    const any1 = await client.messages.create({ ...base, tool_choice: { type: 'any', disable_parallel_tool_use: true } });
    assert.equal(any1.content.length, 1);
    const named = await client.messages.create({ ...base, tool_choice: { type: 'tool', name: 'save' } });
    assert.deepEqual(named.content, [{ type: 'tool_use', id: (named.content[0] as { id: string }).id, name: 'save', input: { ok: true } }]);
    const none = await client.messages.create({ ...base, tool_choice: { type: 'none' } });
    assert.equal(none.stop_reason, 'end_turn');
    const answered = await client.messages.create({
      ...base,
      messages: [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'lookup', input: { query: 'q', limit: 1 } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'found three cats' }] },
      ],
    });
    assert.equal(answered.stop_reason, 'end_turn');
    assert.deepEqual(
      answered.content.map((b) => b.type),
      ['text'],
    );
  });

  test('system blocks, images, stop_sequences, max_tokens and thinking', async () => {
    const image = { type: 'image' as const, source: { type: 'base64' as const, media_type: 'image/png' as const, data: 'iVBORw0KGgo=' } };
    const withImage = await client.messages.create({
      model: 'c',
      max_tokens: 100,
      system: [{ type: 'text', text: 'System block' }],
      messages: [{ role: 'user', content: [image, { type: 'text', text: 'What is in this picture?' }] }],
    });
    const noImage = await client.messages.countTokens({
      model: 'c',
      system: [{ type: 'text', text: 'System block' }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'What is in this picture?' }] }],
    });
    assert.equal(withImage.usage.input_tokens, noImage.input_tokens + 85);
    assert.match((withImage.content[0] as { text: string }).text, /What is in this picture\?/);

    const stopped = await client.messages.create({
      model: 'c',
      max_tokens: 100,
      stop_sequences: ['reply'],
      messages: [{ role: 'user', content: 'x' }],
    });
    assert.equal(stopped.stop_reason, 'stop_sequence');
    assert.equal(stopped.stop_sequence, 'reply');
    assert.deepEqual(stopped.content, [{ type: 'text', text: 'Simulated ' }]);

    const short = await client.messages.create({ model: 'c', max_tokens: 1, messages: [{ role: 'user', content: 'x' }] });
    assert.equal(short.stop_reason, 'max_tokens');

    const thinking = await client.messages
      .stream({
        model: 'c',
        max_tokens: 2048,
        thinking: { type: 'enabled', budget_tokens: 1024 },
        messages: [{ role: 'user', content: 'think' }],
      })
      .finalMessage();
    const first = thinking.content[0];
    assert.ok(first?.type === 'thinking');
    assert.ok(first.signature.length > 10);
    assert.equal(thinking.content[1]?.type, 'text');
  });

  test('missing max_tokens → 400 invalid_request_error; unknown role → 400', async () => {
    const res = await fetch(`${sim.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'c', messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(res.status, 400);
    assert.deepEqual(await res.json(), {
      type: 'error',
      error: { type: 'invalid_request_error', message: 'max_tokens: Field required' },
      request_id: res.headers.get('request-id'),
    });
    await assert.rejects(
      client.messages.create({ model: 'c', max_tokens: 5, messages: [{ role: 'system' as 'user', content: 'hi' }] }),
      (err: unknown) => err instanceof Anthropic.BadRequestError,
    );
  });

  test('models.list in Anthropic shape', async () => {
    const page = await client.models.list();
    assert.ok(page.data.some((m) => m.id === 'claude-sonnet-4-6' && m.type === 'model'));
  });
});
