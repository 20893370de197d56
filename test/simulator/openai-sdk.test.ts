// Wire fidelity of the OpenAI-format endpoints, proven with the official `openai` SDK.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, test } from 'vitest';
import OpenAI, { toFile } from 'openai';
import type { ChatCompletionChunk, ChatCompletionTool } from 'openai/resources/chat/completions';
import { type RunningSimulator, startSimulator } from './server.js';

let sim: RunningSimulator;
let client: OpenAI;

beforeAll(async () => {
  sim = await startSimulator({ name: 'openai-sdk' });
  client = new OpenAI({ baseURL: `${sim.url}/v1`, apiKey: 'x', maxRetries: 0 });
});
afterAll(() => sim.close());

const weather: ChatCompletionTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['c', 'f'] }, days: { type: 'integer' } },
      required: ['city', 'unit'],
    },
  },
};
const clock: ChatCompletionTool = {
  type: 'function',
  function: { name: 'get_time', parameters: { type: 'object', properties: { zone: { type: 'string' } }, required: ['zone'] } },
};

describe('chat completions', () => {
  test('JSON: content, echoed model, ids, usage, instance header', async () => {
    const { data, response } = await client.chat.completions
      .create({
        model: 'gpt-4o-mini',
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'Hello simulator, how are you?' },
        ],
      })
      .withResponse();
    assert.equal(response.headers.get('x-sim-instance'), 'openai-sdk');
    assert.match(data.id, /^chatcmpl-/);
    assert.equal(data.object, 'chat.completion');
    assert.equal(data.model, 'gpt-4o-mini');
    const choice = data.choices[0];
    assert.ok(choice);
    assert.match(choice.message.content ?? '', /^Simulated reply to: Hello simulator, how are you\?/);
    assert.equal(choice.finish_reason, 'stop');
    const usage = data.usage;
    assert.ok(usage);
    assert.ok(usage.prompt_tokens > 6);
    assert.equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens);
    assert.equal(usage.prompt_tokens_details?.cached_tokens, 0);
  });

  test('deterministic: same input same content, different input different content', async () => {
    const ask = async (text: string) =>
      (await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: text }] })).choices[0]?.message.content;
    const a1 = await ask('one two three four five six seven eight nine ten eleven twelve thirteen');
    const a2 = await ask('one two three four five six seven eight nine ten eleven twelve thirteen');
    const b = await ask('something else entirely');
    assert.equal(a1, a2);
    assert.notEqual(a1, b);
  });

  test('stream with include_usage: role chunk, content joins to the JSON reply, usage chunk, [DONE]', async () => {
    const messages = [{ role: 'user' as const, content: 'Stream me a reply please' }];
    const json = await client.chat.completions.create({ model: 'gpt-4o', messages });
    const stream = await client.chat.completions.create({
      model: 'gpt-4o',
      messages,
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks: ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    assert.ok(chunks.length >= 4);
    assert.equal(chunks[0]?.choices[0]?.delta.role, 'assistant');
    assert.ok(chunks.every((c) => c.object === 'chat.completion.chunk' && c.id === chunks[0]?.id && c.model === 'gpt-4o'));
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
    assert.equal(text, json.choices[0]?.message.content);
    const last = chunks[chunks.length - 1];
    assert.deepEqual(last?.choices, []);
    assert.deepEqual(last?.usage, json.usage);
    assert.equal(chunks[chunks.length - 2]?.choices[0]?.finish_reason, 'stop');
    assert.ok(chunks.slice(0, -1).every((c) => c.usage === null));
  });

  test('stream without include_usage has no usage chunk', async () => {
    const stream = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: true });
    const chunks: ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    assert.ok(chunks.every((c) => c.choices.length === 1 && c.usage === undefined));
  });

  test('tool call (JSON): first tool, schema-valid arguments, finish_reason tool_calls', async () => {
    const res = await client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'weather in Oslo?' }],
      tools: [weather, clock],
    });
    const choice = res.choices[0];
    assert.equal(choice?.finish_reason, 'tool_calls');
    assert.equal(choice?.message.content, null);
    const call = choice?.message.tool_calls?.[0];
    assert.ok(call && call.type === 'function');
    assert.match(call.id, /^call_/);
    assert.equal(call.function.name, 'get_weather');
    assert.deepEqual(JSON.parse(call.function.arguments), { city: 'sim-city', unit: 'c' });
  });

  test('tool choice: named tool, required+parallel gives two calls, tool result gives text', async () => {
    const named = await client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'time?' }],
      tools: [weather, clock],
      tool_choice: { type: 'function', function: { name: 'get_time' } },
    });
    assert.deepEqual(
      named.choices[0]?.message.tool_calls?.map((c) => (c.type === 'function' ? c.function.name : '')),
      ['get_time'],
    );
    const parallel = await client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'both' }],
      tools: [weather, clock],
      tool_choice: 'required',
    });
    assert.equal(parallel.choices[0]?.message.tool_calls?.length, 2);
    const serial = await client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'both' }],
      tools: [weather, clock],
      tool_choice: 'required',
      parallel_tool_calls: false,
    });
    assert.equal(serial.choices[0]?.message.tool_calls?.length, 1);
    const none = await client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'x' }],
      tools: [weather],
      tool_choice: 'none',
    });
    assert.equal(none.choices[0]?.finish_reason, 'stop');
    const answered = await client.chat.completions.create({
      model: 'm',
      tools: [weather],
      messages: [
        { role: 'user', content: 'weather?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
      ],
    });
    assert.equal(answered.choices[0]?.finish_reason, 'stop');
    assert.match(answered.choices[0]?.message.content ?? '', /^Simulated reply to: weather\?/);
  });

  test('tool calls streamed: the SDK stream helper assembles parallel fragments', async () => {
    const stream = client.chat.completions.stream({
      model: 'm',
      messages: [{ role: 'user', content: 'both please' }],
      tools: [weather, clock],
      tool_choice: 'required',
      stream_options: { include_usage: true },
    });
    const argDeltas: string[] = [];
    stream.on('chunk', (c) => {
      for (const tc of c.choices[0]?.delta.tool_calls ?? []) if (tc.function?.arguments) argDeltas.push(tc.function.arguments);
    });
    const final = await stream.finalChatCompletion();
    const calls = final.choices[0]?.message.tool_calls ?? [];
    assert.equal(final.choices[0]?.finish_reason, 'tool_calls');
    assert.equal(calls.length, 2);
    const [first, second] = calls;
    assert.ok(first?.type === 'function' && second?.type === 'function');
    assert.deepEqual(JSON.parse(first.function.arguments), { city: 'sim-city', unit: 'c' });
    assert.deepEqual(JSON.parse(second.function.arguments), { zone: 'sim-zone' });
    assert.ok(argDeltas.length > 4, 'arguments arrive in several fragments');
    assert.ok(final.usage && final.usage.completion_tokens > 0);
  });

  test('response_format json_schema / json_object give valid JSON content', async () => {
    const schema = {
      type: 'object',
      properties: { title: { type: 'string' }, score: { type: 'number' }, tags: { type: 'array', items: { type: 'string' } } },
      required: ['title', 'score', 'tags'],
    };
    const res = await client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'rate it' }],
      response_format: { type: 'json_schema', json_schema: { name: 'rating', schema } },
    });
    assert.deepEqual(JSON.parse(res.choices[0]?.message.content ?? ''), { title: 'sim-title', score: 1.5, tags: ['sim-tags'] });
    const obj = await client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'json' }],
      response_format: { type: 'json_object' },
    });
    assert.match((JSON.parse(obj.choices[0]?.message.content ?? '') as { reply: string }).reply, /^Simulated reply/);
  });

  test('max_completion_tokens truncates with finish_reason length; n gives n choices', async () => {
    const res = await client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'a long answer please' }],
      max_completion_tokens: 2,
    });
    assert.equal(res.choices[0]?.finish_reason, 'length');
    assert.equal(res.choices[0]?.message.content, 'Simulate');
    assert.equal(res.usage?.completion_tokens, 2);
    const many = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }], n: 3 });
    assert.deepEqual(
      many.choices.map((c) => c.index),
      [0, 1, 2],
    );
    assert.equal(new Set(many.choices.map((c) => c.message.content)).size, 3);
  });
});

describe('embeddings', () => {
  test('default encoding: the SDK asks for base64 and decodes unit vectors', async () => {
    const res = await client.embeddings.create({ model: 'text-embedding-3-small', input: ['alpha', 'beta'] });
    assert.equal(res.data.length, 2);
    const [a, b] = res.data.map((d) => d.embedding);
    assert.ok(a && b);
    assert.equal(a.length, 16);
    assert.ok(Math.abs(Math.hypot(...a) - 1) < 1e-5);
    assert.notDeepEqual(a, b);
    assert.equal(res.usage.prompt_tokens, res.usage.total_tokens);
    const recorded = sim.requests.findLast((r) => r.path === '/v1/embeddings');
    assert.equal((recorded?.body as { encoding_format?: string }).encoding_format, 'base64');
  });

  test('float encoding matches the base64 values; dimensions and token input', async () => {
    const b64 = await client.embeddings.create({ model: 'e', input: 'alpha' });
    const float = await client.embeddings.create({ model: 'e', input: 'alpha', encoding_format: 'float' });
    const x = b64.data[0]?.embedding ?? [];
    const y = float.data[0]?.embedding ?? [];
    assert.equal(x.length, y.length);
    x.forEach((v, i) => assert.ok(Math.abs(v - (y[i] ?? 0)) < 1e-6));
    const small = await client.embeddings.create({
      model: 'e',
      input: [
        [1, 2, 3],
        [4, 5],
      ],
      dimensions: 8,
      encoding_format: 'float',
    });
    assert.deepEqual(
      small.data.map((d) => d.embedding.length),
      [8, 8],
    );
    assert.equal(small.usage.total_tokens, 5);
  });
});

describe('audio', () => {
  test('speech wav: RIFF header, 24 kHz PCM, length grows with input and shrinks with speed', async () => {
    const get = async (input: string, speed?: number) => {
      const res = await client.audio.speech.create({
        model: 'tts-1',
        voice: 'alloy',
        input,
        response_format: 'wav',
        ...(speed ? { speed } : {}),
      });
      assert.equal(res.headers.get('content-type'), 'audio/wav');
      return Buffer.from(await res.arrayBuffer());
    };
    const wav = await get('Hello there, this is a test.');
    assert.equal(wav.toString('ascii', 0, 4), 'RIFF');
    assert.equal(wav.toString('ascii', 8, 12), 'WAVE');
    assert.equal(wav.readUInt32LE(24), 24_000);
    assert.equal(wav.readUInt32LE(40), wav.length - 44);
    assert.equal(wav.readUInt32LE(4), wav.length - 8);
    const longer = await get('Hello there, this is a test.'.repeat(4));
    assert.ok(longer.length > wav.length * 3);
    const faster = await get('Hello there, this is a test.', 2);
    assert.ok(Math.abs(faster.length - 44 - (wav.length - 44) / 2) <= 4);
  });

  test('speech mp3: consecutive MPEG-1 Layer III frame headers', async () => {
    const res = await client.audio.speech.create({ model: 'tts-1', voice: 'alloy', input: 'Hello mp3 world' });
    assert.equal(res.headers.get('content-type'), 'audio/mpeg');
    const mp3 = Buffer.from(await res.arrayBuffer());
    assert.equal(mp3.length % 192, 0);
    for (let off = 0; off < mp3.length; off += 192) {
      assert.equal(mp3[off], 0xff);
      assert.equal((mp3[off + 1] ?? 0) & 0xfe, 0xfa, 'sync + MPEG-1 + Layer III');
    }
  });

  test('transcription: multipart upload, text derived from size and sha256', async () => {
    const wav = Buffer.alloc(44 + 32_000);
    wav.write('RIFF', 0, 'ascii');
    wav.writeUInt32LE(36 + 32_000, 4);
    wav.write('WAVEfmt ', 8, 'ascii');
    wav.writeUInt32LE(16, 16);
    wav.writeUInt16LE(1, 20);
    wav.writeUInt16LE(1, 22);
    wav.writeUInt32LE(16_000, 24);
    wav.writeUInt32LE(32_000, 28);
    wav.writeUInt16LE(2, 32);
    wav.writeUInt16LE(16, 34);
    wav.write('data', 36, 'ascii');
    wav.writeUInt32LE(32_000, 40);
    for (let i = 44; i < wav.length; i++) wav[i] = i % 251;
    const sha = createHash('sha256').update(wav).digest('hex').slice(0, 6);
    const expected = `transcribed ${wav.length} bytes of audio/wav ${sha}`;

    const json = await client.audio.transcriptions.create({
      model: 'whisper-1',
      file: await toFile(wav, 'clip.wav', { type: 'audio/wav' }),
      language: 'en',
    });
    assert.equal(json.text, expected);
    const rec = sim.requests.findLast((r) => r.path === '/v1/audio/transcriptions');
    assert.deepEqual(rec?.body, { fields: { model: 'whisper-1', language: 'en' }, fileBytes: wav.length, filename: 'clip.wav' });

    const text = await client.audio.transcriptions.create({
      model: 'whisper-1',
      file: await toFile(wav, 'clip.wav', { type: 'audio/wav' }),
      response_format: 'text',
    });
    assert.equal(String(text).trim(), expected);
    const verbose = await client.audio.transcriptions.create({
      model: 'whisper-1',
      file: await toFile(wav, 'clip.wav', { type: 'audio/wav' }),
      response_format: 'verbose_json',
    });
    assert.equal(verbose.duration, 1);
  });
});

describe('responses', () => {
  test('stream: full event sequence, increasing sequence_number, usage, no [DONE]', async () => {
    const stream = await client.responses.create({
      model: 'gpt-4o',
      input: 'Tell me about streams',
      instructions: 'Be nice',
      stream: true,
    });
    const events: Array<{ type: string; sequence_number: number }> = [];
    let text = '';
    for await (const ev of stream) {
      events.push(ev);
      if (ev.type === 'response.output_text.delta') text += ev.delta;
      if (ev.type === 'response.completed') {
        assert.equal(ev.response.status, 'completed');
        const u = ev.response.usage;
        assert.ok(u);
        assert.equal(u.total_tokens, u.input_tokens + u.output_tokens);
        assert.equal(u.input_tokens_details.cached_tokens, 0);
        assert.equal(u.output_tokens_details.reasoning_tokens, 0);
        assert.equal(ev.response.output_text ?? text, text);
      }
    }
    const types = events.map((e) => e.type).filter((t, i, all) => t !== 'response.output_text.delta' || all[i - 1] !== t);
    assert.deepEqual(types, [
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    assert.deepEqual(
      events.map((e) => e.sequence_number),
      events.map((_, i) => i),
    );
    assert.match(text, /^Simulated reply to: Tell me about streams/);
  });

  test('non-stream and the SDK stream helper agree; function tools', async () => {
    const plain = await client.responses.create({ model: 'gpt-4o', input: [{ role: 'user', content: 'Same text' }] });
    assert.match(plain.id, /^resp_/);
    const helper = await client.responses.stream({ model: 'gpt-4o', input: [{ role: 'user', content: 'Same text' }] }).finalResponse();
    assert.equal(helper.output_text, plain.output_text);
    const tools = await client.responses.create({
      model: 'gpt-4o',
      input: 'weather?',
      tools: [
        {
          type: 'function',
          name: 'get_weather',
          strict: false,
          parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        },
      ],
    });
    const call = tools.output[0];
    assert.ok(call?.type === 'function_call');
    assert.deepEqual(JSON.parse(call.arguments), { city: 'sim-city' });
  });
});

test('models.list', async () => {
  const ids: string[] = [];
  for await (const m of client.models.list()) ids.push(m.id);
  assert.ok(ids.includes('gpt-4o-mini'));
});
