// Raw-HTTP checks of what the SDKs hide: SSE framing, rerank, error shapes, recording, multipart
// edge cases, and the CLI entry.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, test } from 'vitest';
import { fileURLToPath } from 'node:url';
import { type RunningSimulator, startSimulator } from './server.js';

let sim: RunningSimulator;

beforeAll(async () => {
  sim = await startSimulator({ name: 'raw', embeddingDimensions: 4 });
});
afterAll(() => sim.close());

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${sim.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

/** Splits an SSE body into frames of {event, data}. */
function frames(text: string): Array<{ event: string | null; data: string }> {
  return text
    .split('\n\n')
    .filter((f) => f.trim() !== '')
    .map((f) => {
      const lines = f.split('\n');
      const event = lines.find((l) => l.startsWith('event: '))?.slice(7) ?? null;
      const data = lines
        .filter((l) => l.startsWith('data: '))
        .map((l) => l.slice(6))
        .join('\n');
      return { event, data };
    });
}

describe('SSE framing', () => {
  test('chat: bare data frames ending with [DONE]; Anthropic: every frame named like its type', async () => {
    const chat = await post('/v1/chat/completions', { model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    assert.match(chat.headers.get('content-type') ?? '', /^text\/event-stream/);
    const cf = frames(await chat.text());
    assert.ok(cf.every((f) => f.event === null));
    assert.equal(cf[cf.length - 1]?.data, '[DONE]');

    const msg = await post('/v1/messages', { model: 'c', max_tokens: 20, stream: true, messages: [{ role: 'user', content: 'hi' }] });
    const mf = frames(await msg.text());
    assert.ok(mf.every((f) => f.event !== null && (JSON.parse(f.data) as { type: string }).type === f.event));
    assert.deepEqual(
      mf.slice(0, 2).map((f) => f.event),
      ['message_start', 'ping'],
    );
    assert.equal(mf[mf.length - 1]?.event, 'message_stop');
  });

  test('responses: named events, sequence numbers 0..n, no [DONE]; max_output_tokens → response.incomplete', async () => {
    const res = await post('/v1/responses', {
      model: 'm',
      stream: true,
      input: [{ role: 'user', content: [{ type: 'input_text', text: 'hello' }] }],
    });
    const rf = frames(await res.text());
    assert.ok(rf.every((f) => f.data !== '[DONE]' && f.event?.startsWith('response.')));
    assert.deepEqual(
      rf.map((f) => (JSON.parse(f.data) as { sequence_number: number }).sequence_number),
      rf.map((_, i) => i),
    );
    const cut = await post('/v1/responses', { model: 'm', stream: true, input: 'hello there', max_output_tokens: 2 });
    const last = frames(await cut.text()).pop();
    assert.equal(last?.event, 'response.incomplete');
    assert.deepEqual((JSON.parse(last?.data ?? '{}') as { response: { incomplete_details: unknown } }).response.incomplete_details, {
      reason: 'max_output_tokens',
    });
  });
});

describe('rerank', () => {
  test('sorted by score, index is the request position, top_n and return_documents', async () => {
    const documents = ['the cat sat on the mat', 'stock markets fell today', 'a cat and a dog', 'cats are great pets'];
    const res = await post('/v1/rerank', { model: 'rerank-v3.5', query: 'cat on a mat', documents, top_n: 3, return_documents: true });
    const body = (await res.json()) as {
      id: string;
      model: string;
      results: Array<{ index: number; relevance_score: number; document?: { text: string } }>;
      usage: { total_tokens: number };
    };
    assert.equal(body.model, 'rerank-v3.5');
    assert.equal(body.results.length, 3);
    assert.equal(body.results[0]?.index, 0);
    assert.equal(body.results[0]?.document?.text, documents[0]);
    const scores = body.results.map((r) => r.relevance_score);
    assert.deepEqual(
      scores,
      [...scores].sort((a, b) => b - a),
    );
    assert.ok(scores.every((s) => s >= 0 && s <= 1));
    assert.ok(body.usage.total_tokens > 0);
    const again = (await (await post('/v1/rerank', { model: 'r', query: 'cat on a mat', documents })).json()) as typeof body;
    assert.equal(again.results.length, 4);
    assert.equal(again.results[0]?.document, undefined);
    assert.deepEqual(
      again.results.slice(0, 3).map((r) => r.relevance_score),
      scores,
    );
    assert.equal((await post('/v1/rerank', { model: 'r', query: 'q' })).status, 400);
  });
});

describe('errors and recording', () => {
  test('unknown path → 404 OpenAI format with instance header; bad JSON → 400 per family', async () => {
    const nf = await fetch(`${sim.url}/v1/nope`);
    assert.equal(nf.status, 404);
    assert.equal(nf.headers.get('x-sim-instance'), 'raw');
    assert.deepEqual(await nf.json(), {
      error: { message: 'Invalid URL (GET /v1/nope)', type: 'invalid_request_error', param: null, code: 'not_found' },
    });
    const bad = await post('/v1/chat/completions', '{"model":');
    assert.equal(bad.status, 400);
    assert.equal(((await bad.json()) as { error: { type: string } }).error.type, 'invalid_request_error');
    const badA = await post('/v1/messages/count_tokens', 'nope');
    assert.equal(((await badA.json()) as { type: string; error: { type: string } }).error.type, 'invalid_request_error');
    assert.equal(sim.requests[sim.requests.length - 1]?.body, 'nope');
  });

  test('count_tokens, embeddings default dimensions and validation', async () => {
    const count = await post('/v1/messages/count_tokens', { model: 'c', messages: [{ role: 'user', content: '12345678' }] });
    assert.deepEqual(await count.json(), { input_tokens: 2 + 3 });
    const emb = (await (await post('/v1/embeddings', { model: 'e', input: 'x' })).json()) as { data: Array<{ embedding: number[] }> };
    assert.equal(emb.data[0]?.embedding.length, 4);
    assert.equal((await post('/v1/embeddings', { model: 'e', input: [] })).status, 400);
    assert.equal((await post('/v1/embeddings', { model: 'e', input: 'x', dimensions: 0 })).status, 400);
  });

  test('records method, path, lower-cased headers and parsed body; keeps the last 200', async () => {
    await post('/v1/chat/completions', { model: 'rec', messages: [{ role: 'user', content: 'x' }] }, { 'X-Trace': 'abc' });
    const rec = sim.requests[sim.requests.length - 1];
    assert.equal(rec?.method, 'POST');
    assert.equal(rec?.path, '/v1/chat/completions');
    assert.equal(rec?.headers['x-trace'], 'abc');
    assert.equal((rec?.body as { model: string }).model, 'rec');
    assert.ok(typeof rec?.at === 'number');
    await Promise.all(Array.from({ length: 210 }, () => fetch(`${sim.url}/v1/models`).then((r) => r.arrayBuffer())));
    assert.equal(sim.requests.length, 200);
  });
});

test('clients vanishing mid-body do not disturb the server', async () => {
  for (const path of ['/v1/chat/completions', '/v1/audio/transcriptions', '/v1/nope']) {
    const socket = connect(sim.port, '127.0.0.1');
    await once(socket, 'connect');
    // Destroyed once the head and part of the body are written out, with most of the body owed.
    await new Promise((written) =>
      socket.write(
        `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: 100000\r\n\r\n--b\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\nabc`,
        written,
      ),
    );
    socket.destroy();
  }
  // (A server error on those sockets would fail this file as an unhandled error.)
  assert.equal((await fetch(`${sim.url}/health`)).status, 200);
  assert.equal((await post('/v1/chat/completions', { model: 'after', messages: [{ role: 'user', content: 'still here?' }] })).status, 200);
});

describe('audio edge cases', () => {
  test('speech: pcm served raw, unsupported format 400, cut-after drops the body', async () => {
    const pcm = await post('/v1/audio/speech', { model: 't', input: 'abc', response_format: 'pcm' });
    assert.equal(pcm.headers.get('content-type'), 'audio/pcm');
    assert.equal((await pcm.arrayBuffer()).byteLength, Math.round(3 * 0.06 * 24_000) * 2);
    assert.equal((await post('/v1/audio/speech', { model: 't', input: 'abc', response_format: 'opus' })).status, 400);
    assert.equal((await post('/v1/audio/speech', { model: 't', input: 'abc', speed: 9 })).status, 400);
    const cut = await post('/v1/audio/speech', { model: 't', input: 'x'.repeat(400), response_format: 'wav' }, { 'x-sim-cut-after': '2' });
    assert.equal(cut.status, 200);
    await assert.rejects(cut.arrayBuffer(), TypeError);
  });

  test('transcription: srt/vtt, missing file, malformed multipart', async () => {
    const form = (withFile: boolean, format: string) => {
      const fd = new FormData();
      fd.set('model', 'whisper-1');
      fd.set('response_format', format);
      if (withFile) fd.set('file', new Blob([new Uint8Array(32_000)], { type: 'audio/webm' }), 'a.webm');
      return fetch(`${sim.url}/v1/audio/transcriptions`, { method: 'POST', body: fd });
    };
    const srt = await (await form(true, 'srt')).text();
    assert.match(srt, /^1\n00:00:00,000 --> 00:00:01,000\ntranscribed 32000 bytes of audio\/webm [0-9a-f]{6}\n\n$/);
    const vtt = await (await form(true, 'vtt')).text();
    assert.match(vtt, /^WEBVTT\n\n00:00:00.000 --> 00:00:01.000\n/);
    assert.equal((await form(false, 'json')).status, 400);
    const broken = await fetch(`${sim.url}/v1/audio/transcriptions`, {
      method: 'POST',
      headers: { 'content-type': 'multipart/form-data; boundary=xyz' },
      body: '--xyz\r\nContent-Disposition: form-data; name="model"\r\n\r\nwhisper',
    });
    assert.equal(broken.status, 400);
  });

  test('transcription: fields named like object properties are fields like any other', async () => {
    for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
      const fd = new FormData();
      fd.set('model', 'whisper-1');
      fd.set('file', new Blob([new Uint8Array(3_200)], { type: 'audio/webm' }), 'a.webm');
      fd.set(name, 'x');
      const res = await fetch(`${sim.url}/v1/audio/transcriptions`, { method: 'POST', body: fd });
      assert.equal(res.status, 200, `${name}: ${await res.clone().text()}`);
    }
  });

  test('transcription: multipart split into 1-byte and odd-sized chunks parses identically', async () => {
    const file = Buffer.alloc(200_003);
    for (let i = 0; i < file.length; i++) file[i] = (i * 7) % 256;
    const boundary = '----simBoundary42';
    const body = Buffer.concat([
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\nwhisper-1\r\n`),
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="x.bin"\r\nContent-Type: audio/ogg\r\n\r\n`),
      file,
      // A near-miss of the delimiter inside the payload must not end the part.
      Buffer.from(`\r\n--${boundary.slice(0, -1)}X`),
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);
    const payload = Buffer.concat([file, Buffer.from(`\r\n--${boundary.slice(0, -1)}X`)]);
    const expected = `transcribed ${payload.length} bytes of audio/ogg ${createHash('sha256').update(payload).digest('hex').slice(0, 6)}`;
    for (const size of [1, 997]) {
      const pieces: Buffer[] = [];
      // 1-byte pieces only around the headers, to keep the test fast.
      for (let off = 0; off < body.length;) {
        const n = off < 300 || off > body.length - 300 ? 1 : size === 1 ? 4096 : size;
        pieces.push(body.subarray(off, off + n));
        off += n;
      }
      const stream = new ReadableStream<Uint8Array>({
        pull(controller) {
          const next = pieces.shift();
          if (next) controller.enqueue(next);
          else controller.close();
        },
      });
      const res = await fetch(`${sim.url}/v1/audio/transcriptions`, {
        method: 'POST',
        headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
        body: stream,
        duplex: 'half',
      } as RequestInit);
      const json = (await res.json()) as { text: string };
      assert.equal(json.text, expected);
    }
  });
});

test('CLI: prints the URL, serves, exits 0 on SIGTERM', async () => {
  const main = fileURLToPath(new URL('./main.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', main], {
    env: { ...process.env, SIM_PORT: '0', SIM_NAME: 'cli', SIM_LATENCY_MS: '1' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/\S+?) /.exec(out);
      if (m?.[1]) resolve(m[1]);
    });
    child.once('exit', () => reject(new Error(`exited early: ${out}`)));
  });
  const res = await fetch(`${url}/health`);
  assert.equal(res.headers.get('x-sim-instance'), 'cli');
  child.kill('SIGTERM');
  const [code] = (await once(child, 'exit')) as [number | null];
  assert.equal(code, 0);
});
