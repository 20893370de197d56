// Embeddings, rerank, transcription and speech through the gateway: the official openai package
// (and plain HTTP for rerank) against simulators, with routing headers, audit rows, the API's
// limits at their edges (docs/spec-conformance.md §8), capabilities per model, and failover — the same pipeline as chat.
import { afterAll, beforeAll, describe, test } from 'vitest';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readlinkSync, rmSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import OpenAI, { toFile } from 'openai';
import { countTokens } from 'gpt-tokenizer';
import { request as undiciRequest } from 'undici';
import { eventually, expectError, type Reply } from '../support/http-assertions.js';
import { scrape } from '../observability/scrape.js';
import { waitFor } from '../support/wait-for.js';
import { startGatewayHarness, type GatewayHarness, type HarnessSupplier } from '../support/gateway-harness.js';
import { wavHeader } from '../support/wav.js';

const models: NonNullable<HarnessSupplier['models']> = [
  { id: 'gpt-4o-mini' },
  { id: 'embed-small', upstream: 'text-embedding-3-small', input_usd_per_mtok: 0.02, output_usd_per_mtok: 0, capabilities: ['embeddings'] },
  { id: 'rerank-v1', input_usd_per_mtok: 0.05, capabilities: ['rerank'] },
  { id: 'whisper', upstream: 'whisper-1', usd_per_audio_minute: 0.006, capabilities: ['transcription'] },
  { id: 'tts-1', usd_per_mchar: 15, default_voice: 'alloy', capabilities: ['speech'] },
];

/** A mono 16-bit PCM WAV of `seconds` of a 440 Hz tone, built in the test. */
function wav(seconds: number, rate = 16_000): Buffer {
  const samples = Math.round(seconds * rate);
  const buf = Buffer.concat([wavHeader(samples * 2, rate), Buffer.alloc(samples * 2)]);
  for (let i = 0; i < samples; i++) buf.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / rate)), 44 + i * 2);
  return buf;
}

describe('embeddings, rerank, transcription and speech', () => {
  let h: GatewayHarness;
  let base: string;
  let secret: string;
  let keyId: string;
  let client: OpenAI;
  /** Bodies the SDK sent, captured on the way out. */
  const sent: string[] = [];

  const post = async (path: string, body: unknown, token = secret): Promise<Reply> => {
    const res = await fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? (JSON.parse(text) as Reply['body']) : {} };
  };
  const admin = async (path: string): Promise<Reply> => {
    const res = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${h.adminKey}` } });
    return { status: res.status, headers: res.headers, body: (await res.json()) as Reply['body'] };
  };
  const upload = async (parts: { name: string; value: string | Blob; filename?: string }[]): Promise<Reply> => {
    const form = new FormData();
    for (const p of parts) {
      if (typeof p.value === 'string') form.append(p.name, p.value);
      else form.append(p.name, p.value, p.filename ?? 'audio.bin');
    }
    const res = await fetch(`${base}/v1/audio/transcriptions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}` },
      body: form,
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text.startsWith('{') ? (JSON.parse(text) as Reply['body']) : { text } };
  };

  // Uploads' temporary files go to this file's own temp directory, so the leak check below sees
  // this process's only (other test processes on the machine use the system's at the same time).
  const systemTmp = process.env.TMPDIR;
  const privateTmp = mkdtempSync(join(tmpdir(), 'svc-media-test-'));
  afterAll(() => {
    if (systemTmp === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = systemTmp;
    rmSync(privateTmp, { recursive: true, force: true });
  });

  beforeAll(async () => {
    process.env.TMPDIR = privateTmp;
    h = await startGatewayHarness(
      [
        { name: 'sim-eu', region: 'EU', models, simulator: { embeddingDimensions: 8 } },
        { name: 'sim-us', region: 'US', models, simulator: { embeddingDimensions: 8 } },
        // The failover test fails the primary once per endpoint; the circuit must stay closed for all four.
      ],
      { settings: { SVC_CIRCUIT_FAILURES: '10', SVC_UPLOAD_IDLE_TIMEOUT_MS: '800' }, metrics: true },
    );
    base = h.gateway.url;
    const created = await fetch(`${base}/v1/manage/keys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${h.adminKey}` },
      body: JSON.stringify({ name: 'media' }),
    });
    const json = (await created.json()) as { key: string; id: string };
    secret = json.key;
    keyId = json.id;
    client = new OpenAI({
      baseURL: `${base}/v1`,
      apiKey: secret,
      maxRetries: 0,
      fetch: async (url, init) => {
        if (typeof init?.body === 'string') sent.push(init.body);
        return fetch(url, init);
      },
    });
  });
  afterAll(async () => {
    await h.close();
  });

  test('embeddings.create with default options: base64 on the wire, floats for the caller', async () => {
    sent.length = 0;
    const { data, response } = await client.embeddings
      .create({ model: 'embed-small', input: ['first text', 'second text'] })
      .withResponse();
    const wire = JSON.parse(sent.at(-1)!) as { encoding_format?: string };
    assert.equal(wire.encoding_format, 'base64', 'the SDK asked for base64');
    assert.equal(data.object, 'list', 'object');
    assert.equal(data.model, 'embed-small', 'the public model id');
    assert.equal(data.data.length, 2, 'one embedding per input');
    for (const [i, item] of data.data.entries()) {
      assert.equal(item.index, i, 'index');
      assert.equal(item.embedding.length, 8, 'decoded to 8 floats');
      assert.ok(
        item.embedding.every((x) => typeof x === 'number' && Number.isFinite(x)),
        'numbers',
      );
    }
    assert.equal(data.usage.prompt_tokens, data.usage.total_tokens, 'prompt = total tokens');
    assert.ok(data.usage.prompt_tokens > 0, 'tokens counted');
    assert.equal(response.headers.get('x-svc-supplier'), 'sim-eu', 'routing header');
    assert.equal(response.headers.get('x-svc-region'), 'EU', 'region header');
    assert.equal(response.headers.get('x-svc-failover'), 'false', 'failover header');
    assert.equal(response.headers.get('x-svc-input-tokens'), String(data.usage.prompt_tokens), 'token header');
    assert.equal(Number(response.headers.get('x-svc-cost-usd')), (data.usage.prompt_tokens * 0.02) / 1e6, 'cost at the embedding price');

    const floats = await client.embeddings.create({ model: 'embed-small', input: ['first text', 'second text'], encoding_format: 'float' });
    assert.equal(JSON.parse(sent.at(-1)!).encoding_format, 'float', 'float asked for');
    for (const [i, item] of floats.data.entries()) {
      const viaBase64 = data.data[i]!.embedding;
      assert.deepEqual(
        item.embedding.map((x) => Math.fround(x)),
        viaBase64,
        'the same vector either way (float32)',
      );
    }
    const raw = await post('/v1/embeddings', { model: 'embed-small', input: 'one', encoding_format: 'base64' });
    assert.equal(typeof (raw.body.data as { embedding: unknown }[])[0]!.embedding, 'string', 'base64 for a raw caller that asks for it');
  });

  test('embeddings: 2048 tokens per string pass, 2049 fail naming the index; region and bad input', async () => {
    const at2048 = 'hello' + ' hello'.repeat(2047);
    assert.equal(countTokens(at2048), 2048, 'test input has exactly 2048 tokens');
    const at2049 = at2048 + ' hello';
    const ok = await post('/v1/embeddings', { model: 'embed-small', input: ['short', at2048] });
    assert.equal(ok.status, 200, JSON.stringify(ok.body).slice(0, 300));
    const tooLong = await post('/v1/embeddings', { model: 'embed-small', input: ['short', at2048, at2049] });
    expectError(tooLong, 400, 'invalid_input', 'input[2]');
    assert.match(tooLong.body.error!.human_message, /input\[2\] has 2049 tokens/, 'names the index and count');
    expectError(await post('/v1/embeddings', { model: 'embed-small', input: at2049 }), 400, 'invalid_input', 'input');
    expectError(
      await post('/v1/embeddings', { model: 'embed-small', input: Array.from({ length: 2049 }, () => 1) }),
      400,
      'invalid_input',
      'input',
    );
    const tooMany = await post('/v1/embeddings', { model: 'embed-small', input: Array.from({ length: 2049 }, () => 'x') });
    expectError(tooMany, 400, 'validation_error', 'input');
    assert.match(tooMany.body.error!.human_message, /at most 2048 inputs/);
    expectError(await post('/v1/embeddings', { model: 'embed-small', input: 42 }), 400, 'validation_error', 'input');
    expectError(await post('/v1/embeddings', { model: 'embed-small', input: [''] }), 400, 'invalid_input', 'input[0]');
    expectError(await post('/v1/embeddings', { input: 'x' }), 400, 'missing_model', 'model');
    expectError(
      await post('/v1/embeddings', { model: 'embed-small', input: 'x', encoding_format: 'int8' }),
      400,
      'validation_error',
      'encoding_format',
    );

    const us = await post('/v1/embeddings', { model: 'embed-small', input: [[1, 2, 3]], region: 'us' });
    assert.equal(us.status, 200, JSON.stringify(us.body));
    assert.equal(us.headers.get('x-svc-region'), 'US', 'call-level region honoured');
    assert.equal((us.body.usage as { prompt_tokens: number }).prompt_tokens, 3, 'token arrays count their length');
    expectError(
      await post('/v1/embeddings', { model: 'embed-small', input: 'x', region: 'APAC' }),
      403,
      'provider_redirect_forbidden',
      'region',
    );
  });

  test('a model lacking the capability is refused on every endpoint', async () => {
    expectError(await post('/v1/embeddings', { model: 'gpt-4o-mini', input: 'x' }), 400, 'capability_unsupported', 'model');
    expectError(await post('/v1/rerank', { model: 'embed-small', query: 'q', documents: ['d'] }), 400, 'capability_unsupported', 'model');
    expectError(await post('/v1/audio/speech', { model: 'whisper', input: 'hi' }), 400, 'capability_unsupported', 'model');
    expectError(
      await post('/v1/chat/completions', { model: 'tts-1', messages: [{ role: 'user', content: 'hi' }] }),
      400,
      'capability_unsupported',
      'model',
    );
    const r = await upload([
      { name: 'model', value: 'tts-1' },
      { name: 'file', value: new Blob([wav(0.2)], { type: 'audio/wav' }), filename: 'a.wav' },
    ]);
    expectError(r, 400, 'capability_unsupported', 'model');
    expectError(await post('/v1/embeddings', { model: 'no-such-model', input: 'x' }), 404, 'model_not_found', 'model');
    // "auto" is listed by GET /v1/models, so it is not "a model that does not exist": automatic
    // routing serves the chat endpoints only (docs/autorouter.md).
    for (const [path, body] of [
      ['/v1/embeddings', { model: 'auto', input: 'x' }],
      ['/v1/audio/speech', { model: 'auto', input: 'hi' }],
      ['/v1/native/responses', { model: 'auto', input: [{ role: 'user', content: 'hi' }], stream: true }],
    ] as const) {
      const refused = await post(path, body);
      expectError(refused, 400, 'capability_unsupported', 'model');
      assert.match(refused.body.error!.human_message, /chat\/completions and \/v1\/messages only/, path);
    }
  });

  test('rerank through plain HTTP: sorted by score, original indexes, top_n, documents on request', async () => {
    const documents = ['bananas are yellow', 'the capital of France is Paris', 'Paris is a city in France', 'cats sleep a lot'];
    const all = await post('/v1/rerank', { model: 'rerank-v1', query: 'capital of France', documents });
    assert.equal(all.status, 200, JSON.stringify(all.body));
    const results = all.body.results as { index: number; relevance_score: number; document?: unknown }[];
    assert.equal(results.length, 4, 'every document without top_n');
    assert.deepEqual([...results.map((r) => r.index)].sort(), [0, 1, 2, 3], 'each original position once');
    for (let i = 1; i < results.length; i++) assert.ok(results[i - 1]!.relevance_score >= results[i]!.relevance_score, 'descending scores');
    assert.equal(results[0]!.index, 1, 'the best match is the capital sentence');
    assert.equal(results[0]!.document, undefined, 'no documents unless asked');
    assert.equal(all.body.model, 'rerank-v1', 'public model');
    assert.equal(all.headers.get('x-svc-supplier'), 'sim-eu', 'routing header');
    const tokens = (all.body.usage as { total_tokens: number }).total_tokens;
    assert.equal(all.headers.get('x-svc-input-tokens'), String(tokens), 'token header');

    const top = await post('/v1/rerank', { model: 'rerank-v1', query: 'capital of France', documents, top_n: 2, return_documents: true });
    const best = top.body.results as { index: number; document: { text: string } }[];
    assert.equal(best.length, 2, 'top_n');
    assert.equal(best[0]!.document.text, documents[best[0]!.index], 'document text of the original position');
    expectError(await post('/v1/rerank', { model: 'rerank-v1', query: 'q', documents: [] }), 400, 'validation_error', 'documents');
    expectError(await post('/v1/rerank', { model: 'rerank-v1', documents: ['d'] }), 400, 'missing_fields', 'query');
    expectError(await post('/v1/rerank', { model: 'rerank-v1', query: 'q', documents: ['d'], top_n: 0 }), 400, 'validation_error', 'top_n');
  });

  test('audio.transcriptions.create with a WAV generated in the test; language checked; default model whisper', async () => {
    const audio = wav(1.5);
    const { data, response } = await client.audio.transcriptions
      .create({ file: await toFile(audio, 'tone.wav', { type: 'audio/wav' }), model: 'whisper', language: 'en' })
      .withResponse();
    assert.match(data.text, new RegExp(`^transcribed ${audio.length} bytes of audio/wav`), 'the simulator heard the whole file');
    assert.equal(response.headers.get('x-svc-supplier'), 'sim-eu', 'routing header');
    assert.equal(response.headers.get('x-svc-model'), 'whisper', 'model header');
    // The simulator reports whole seconds of audio: ceil(1.5) = 2 → 2/60 × 0.006.
    assert.equal(Number(response.headers.get('x-svc-cost-usd')), 0.0002, 'cost per audio minute');

    const verbose = await client.audio.transcriptions.create({
      file: await toFile(audio, 'tone.wav'),
      model: 'whisper',
      response_format: 'verbose_json',
      timestamp_granularities: ['word', 'segment'],
    });
    assert.ok(verbose.duration > 0, 'verbose_json passes through');
    const received = h.simulators.get('sim-eu')!.requests.at(-1)!.body as {
      fields: Record<string, string>;
      repeated?: Record<string, string[]>;
    };
    assert.equal(received.fields.model, 'whisper-1', 'the upstream model id');
    assert.deepEqual(
      received.repeated?.['timestamp_granularities[]'],
      ['word', 'segment'],
      'a repeated field reaches the supplier with every value',
    );
    const text = await client.audio.transcriptions.create({
      file: await toFile(audio, 'tone.wav'),
      model: 'whisper',
      response_format: 'text',
    });
    assert.match(String(text), /^transcribed/, 'text format passes through');

    const noModel = await upload([{ name: 'file', value: new Blob([audio]), filename: 'x.wav' }]);
    assert.equal(noModel.status, 200, `default model whisper: ${JSON.stringify(noModel.body)}`);
    expectError(
      await upload([
        { name: 'language', value: 'english' },
        { name: 'file', value: new Blob([audio]), filename: 'x.wav' },
      ]),
      400,
      'validation_error',
      'language',
    );
    expectError(
      await upload([{ name: 'file', value: new Blob(['this is not audio at all']), filename: 'x.wav' }]),
      415,
      'unsupported_media_type',
      'file',
    );
    expectError(await upload([{ name: 'model', value: 'whisper' }]), 400, 'missing_fields', 'file');
    // One file, and one value per single-valued field: never a silently dropped second file, nor a
    // response_format the gateway reads one way and the supplier another.
    expectError(
      await upload([
        { name: 'file', value: new Blob([audio]), filename: 'a.wav' },
        { name: 'file', value: new Blob([audio]), filename: 'b.wav' },
      ]),
      400,
      'validation_error',
      'file',
    );
    // A list field may repeat with or without its brackets (curl -F timestamp_granularities=word -F …=segment).
    const bare = await upload([
      { name: 'response_format', value: 'verbose_json' },
      { name: 'timestamp_granularities', value: 'word' },
      { name: 'timestamp_granularities', value: 'segment' },
      { name: 'file', value: new Blob([audio]), filename: 'x.wav' },
    ]);
    assert.equal(bare.status, 200, JSON.stringify(bare.body));
    for (const name of ['model', 'response_format'])
      expectError(
        await upload([
          { name, value: name === 'model' ? 'whisper' : 'json' },
          { name, value: name === 'model' ? 'whisper' : 'text' },
          { name: 'file', value: new Blob([audio]), filename: 'x.wav' },
        ]),
        400,
        'validation_error',
        name,
      );
    expectError(await post('/v1/audio/transcriptions', { model: 'whisper' }), 415, 'unsupported_media_type');
  });

  test('stream on a transcription: true is refused (not answered with JSON an SDK stream reads as nothing), a non-boolean is invalid, false is fine', async () => {
    const audio = wav(0.5);
    // The SDK's stream: true would otherwise yield zero events and no error.
    const refused = await client.audio.transcriptions
      .create({ file: await toFile(audio, 'tone.wav'), model: 'whisper', stream: true })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    assert.ok(refused instanceof OpenAI.APIError, `stream: true is refused: ${String(refused)}`);
    assert.equal(refused.status, 400);
    assert.equal((refused.error as { code?: string }).code, 'unsupported_parameter');
    assert.equal((refused.error as { param?: string }).param, 'stream');
    assert.match((refused.error as { message?: string }).message ?? '', /streamed transcription/i);
    const file = { name: 'file', value: new Blob([audio]), filename: 'x.wav' };
    expectError(await upload([{ name: 'stream', value: 'banana' }, file]), 400, 'validation_error', 'stream');
    const plain = await upload([{ name: 'stream', value: 'false' }, file]);
    assert.equal(plain.status, 200, JSON.stringify(plain.body));
  });

  test('transcription accepts each format by content: MP3, M4A, FLAC, OGG, WebM', async () => {
    const heads: Record<string, number[]> = {
      mp3: [0x49, 0x44, 0x33, 4, 0, 0, 0, 0, 0, 0, 0, 0],
      m4a: [0, 0, 0, 0x20, 0x66, 0x74, 0x79, 0x70, 0x4d, 0x34, 0x41, 0x20],
      flac: [0x66, 0x4c, 0x61, 0x43, 0, 0, 0, 0x22, 0, 0, 0, 0],
      ogg: [0x4f, 0x67, 0x67, 0x53, 0, 2, 0, 0, 0, 0, 0, 0],
      webm: [0x1a, 0x45, 0xdf, 0xa3, 0x9f, 0x42, 0x86, 0x81, 1, 0, 0, 0],
    };
    for (const [format, head] of Object.entries(heads)) {
      const body = Buffer.concat([Buffer.from(head), Buffer.alloc(4000, 7)]);
      const r = await upload([{ name: 'file', value: new Blob([body]), filename: `clip.${format}` }]);
      assert.equal(r.status, 200, `${format}: ${JSON.stringify(r.body)}`);
    }
  });

  test('a 26 MB upload is rejected with 413 while reading, spooled not buffered; 25 MB exactly passes', async () => {
    const limit = 25 * 1024 * 1024;
    const mb = 1024 * 1024;
    const boundary = 'memtest';
    // Live memory, not garbage: collect before each sample (chunks that flowed through are
    // garbage at once when nothing holds them; a buffered upload would be live).
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const live = () => {
      gc();
      const m = process.memoryUsage();
      return m.heapUsed + m.arrayBuffers;
    };
    /** Bytes the gateway has spooled to its temporary file so far (0 before it exists). */
    const spooled = () => {
      let bytes = 0;
      for (const dir of readdirSync(tmpdir()).filter((d) => d.startsWith('svc-audio-'))) {
        try {
          bytes = Math.max(bytes, statSync(join(tmpdir(), dir, 'audio')).size);
        } catch {
          // not created yet, or already discarded
        }
      }
      return bytes;
    };
    const streamUpload = async (fileBytes: number, checkpoint?: (sent: number) => Promise<void>) => {
      const head = Buffer.from(
        `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="big.wav"\r\ncontent-type: audio/wav\r\n\r\n`,
      );
      const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
      const header = wav(0).subarray(0, 44);
      const chunk = Buffer.alloc(256 * 1024, 0);
      async function* body() {
        yield head;
        yield header;
        for (let sent = header.length; sent < fileBytes; sent += chunk.length) {
          if (checkpoint && sent % (4 * mb) < chunk.length) await checkpoint(sent);
          yield chunk.subarray(0, Math.min(chunk.length, fileBytes - sent));
        }
        yield tail;
      }
      return undiciRequest(`${base}/v1/audio/transcriptions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': `multipart/form-data; boundary=${boundary}` },
        body: Readable.from(body()),
      });
    };
    // The proof is on disk, at fixed points of the upload, so it does not depend on timing: once
    // 16 MB are sent, the gateway's temporary file holds at least 8 MB (the rest may sit in
    // socket buffers). A gateway that buffered the body would write nothing before the end.
    // Memory is sampled at the same points; the client runs in this process too, so its
    // in-flight chunks and socket buffers count: a few MB, far from the 16+ MB a buffer holds.
    const baseline = live();
    let peak = 0;
    const rejected = await streamUpload(26 * mb, async (sent) => {
      if (sent >= 16 * mb && sent < 20 * mb) await waitFor('the gateway to spool 8 MB of the upload to disk', () => spooled() >= 8 * mb);
      peak = Math.max(peak, live() - baseline);
    });
    const body = (await rejected.body.json()) as Reply['body'];
    expectError({ status: rejected.statusCode, headers: new Headers(), body }, 413, 'request_too_large', 'file');
    assert.ok(peak < 16 * mb, `the gateway buffered the upload: memory grew by ${(peak / mb).toFixed(1)} MB`);

    const exact = await streamUpload(limit);
    const ok = (await exact.body.json()) as { text: string };
    assert.equal(exact.statusCode, 200, JSON.stringify(ok));
    assert.match(ok.text, new RegExp(`^transcribed ${limit} bytes`), 'all 25 MB reached the supplier');
  });

  /** Open files and temporary directories of uploads in this process (the gateway runs here). */
  const uploadLeftovers = () => {
    const fds = readdirSync('/proc/self/fd').filter((fd) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`).includes('svc-audio-');
      } catch {
        return false;
      }
    });
    return { fds: fds.length, dirs: readdirSync(tmpdir()).filter((d) => d.startsWith('svc-audio-')).length };
  };

  /** Writes a raw HTTP request in pieces; resolves with what the server sent until it closed. */
  const rawExchange = (head: string, pieces: Buffer[]) =>
    new Promise<string>((resolve, reject) => {
      const url = new URL(base);
      const socket = connect(Number(url.port), url.hostname);
      let received = '';
      socket.on('data', (d) => (received += d.toString('latin1')));
      socket.on('close', () => resolve(received));
      socket.on('error', (e) => (received ? resolve(received) : reject(e)));
      socket.once('connect', () => {
        socket.write(head);
        for (const piece of pieces) socket.write(piece);
      });
    });

  test('uploads never leak: a refused form with a file part after it, a stalled client, a declared size over the limit', async () => {
    const boundary = 'leak';
    const fieldParts = Array.from(
      { length: 40 },
      (_, i) => `--${boundary}\r\ncontent-disposition: form-data; name="f${i}"\r\n\r\nv\r\n`,
    ).join('');
    const fileHead = `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="a.wav"\r\ncontent-type: audio/wav\r\n\r\n`;
    const body = Buffer.concat([Buffer.from(fieldParts + fileHead), wav(0.5), Buffer.from(`\r\n--${boundary}--\r\n`)]);
    const head = (length: number) =>
      `POST /v1/audio/transcriptions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${secret}\r\ncontent-type: multipart/form-data; boundary=${boundary}\r\ncontent-length: ${length}\r\nconnection: close\r\n\r\n`;
    for (let i = 0; i < 3; i++) {
      const answer = await rawExchange(head(body.length), [body]);
      assert.match(answer, /^HTTP\/1\.1 400/, `too many fields is a 400: ${answer.slice(0, 200)}`);
      assert.match(answer, /validation_error/, 'validation_error');
    }
    // A client that sends part of the file and then nothing: cut off after the idle timeout
    // (rawExchange resolves when the gateway closed the connection; the client never does).
    const stalled = await rawExchange(head(2_000_000), [Buffer.from(fileHead), wav(0.2)]);
    assert.ok(!/^HTTP\/1\.1 200/.test(stalled), `a stalled upload is not answered 200: ${stalled.slice(0, 100)}`);
    // A declared size far over the limit is refused before the body is read, and the connection closed.
    const declared = await rawExchange(head(40 * 1024 * 1024), [Buffer.from(fileHead)]);
    assert.match(declared, /^HTTP\/1\.1 413/, `413 up front: ${declared.slice(0, 100)}`);
    assert.match(declared, /connection: close/i, 'the connection is closed rather than drained');
    // Released once the gateway finished with the closed connections (a leak never is).
    let leftovers = uploadLeftovers();
    await waitFor('no open temporary file, no temporary directory', () => {
      leftovers = uploadLeftovers();
      return leftovers.fds === 0 && leftovers.dirs === 0;
    }).catch(() => undefined);
    assert.deepEqual(leftovers, { fds: 0, dirs: 0 }, 'no open temporary file, no temporary directory');
  });

  test('audio.speech.create in mp3 and wav: audio content types, streamed bytes, cost per character', async () => {
    const before = await scrape(h.gateway.metricsUrl!);
    const mp3 = await client.audio.speech.create({ model: 'tts-1', input: 'Hello from the gateway.', voice: 'alloy' }).withResponse();
    assert.equal(mp3.response.headers.get('content-type'), 'audio/mpeg', 'mp3 by default');
    assert.equal(mp3.response.headers.get('x-svc-supplier'), 'sim-eu', 'routing header');
    const mp3Bytes = Buffer.from(await mp3.data.arrayBuffer());
    assert.ok(mp3Bytes.length > 0 && mp3Bytes[0] === 0xff && (mp3Bytes[1]! & 0xe0) === 0xe0, 'MPEG frames');
    assert.equal(Number(mp3.response.headers.get('x-svc-cost-usd')), (23 * 15) / 1e6, 'cost per character');
    // Counted against the supplier that spoke it, as its routing headers say (it read "none").
    const labels = { interface: 'audio.speech', supplier: 'sim-eu', region: 'EU', status: '200' };
    await waitFor('the speech request in the metrics', async () => {
      const after = await scrape(h.gateway.metricsUrl!);
      return after.sum('svc_gateway_requests_total', labels) - before.sum('svc_gateway_requests_total', labels) === 1;
    });
    const unattributed = { interface: 'audio.speech', supplier: 'none', status: '200' };
    const after = await scrape(h.gateway.metricsUrl!);
    assert.equal(after.sum('svc_gateway_requests_total', unattributed) - before.sum('svc_gateway_requests_total', unattributed), 0);

    const wavReply = await client.audio.speech
      .create({ model: 'tts-1', input: 'Hello', voice: 'alloy', response_format: 'wav' })
      .withResponse();
    assert.equal(wavReply.response.headers.get('content-type'), 'audio/wav', 'wav');
    const wavBytes = Buffer.from(await wavReply.data.arrayBuffer());
    assert.equal(wavBytes.toString('latin1', 0, 4), 'RIFF', 'a RIFF file');
    assert.equal(wavBytes.toString('latin1', 8, 12), 'WAVE', 'a WAVE file');

    const noVoice = await fetch(`${base}/v1/audio/speech`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
      body: JSON.stringify({ model: 'tts-1', input: 'no voice given' }),
    });
    assert.equal(noVoice.status, 200, 'voice is optional');
    await noVoice.arrayBuffer();
  });

  test('speech limits at the edges: 4096 vs 4097 characters, speed 0.25/4.0 vs 0.24/4.01, formats', async () => {
    const speak = async (body: Record<string, unknown>) => {
      const res = await fetch(`${base}/v1/audio/speech`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
        body: JSON.stringify({ model: 'tts-1', voice: 'alloy', ...body }),
      });
      const bytes = Buffer.from(await res.arrayBuffer());
      const json = res.headers.get('content-type')?.startsWith('application/json') ? (JSON.parse(bytes.toString()) as Reply['body']) : {};
      return { status: res.status, headers: res.headers, body: json };
    };
    assert.equal((await speak({ input: 'a'.repeat(4096) })).status, 200, '4096 characters pass');
    const over = await speak({ input: 'a'.repeat(4097) });
    expectError(over, 400, 'validation_error', 'input');
    assert.match(over.body.error!.human_message, /4097 characters/, 'says how many');
    assert.equal((await speak({ input: '😀'.repeat(4096) })).status, 200, '4096 emoji are 4096 characters (code points)');
    assert.equal((await speak({ input: 'x', speed: 0.25 })).status, 200, 'speed 0.25');
    assert.equal((await speak({ input: 'x', speed: 4.0 })).status, 200, 'speed 4.0');
    expectError(await speak({ input: 'x', speed: 0.24 }), 400, 'validation_error', 'speed');
    expectError(await speak({ input: 'x', speed: 4.01 }), 400, 'validation_error', 'speed');
    expectError(await speak({ input: 'x', response_format: 'ogg' }), 400, 'validation_error', 'response_format');
    expectError(await speak({ input: '' }), 400, 'validation_error', 'input');
  });

  test('failover works for every endpoint before the first byte', async () => {
    const primary = h.simulators.get('sim-eu')!;
    primary.setFaults({ status: 503 });
    try {
      const e = await post('/v1/embeddings', { model: 'embed-small', input: 'x' });
      assert.equal(e.status, 200, JSON.stringify(e.body));
      assert.equal(e.headers.get('x-svc-supplier'), 'sim-us', 'embeddings failed over');
      assert.equal(e.headers.get('x-svc-failover'), 'true', 'failover header');
      const r = await post('/v1/rerank', { model: 'rerank-v1', query: 'q', documents: ['a', 'b'] });
      assert.equal(r.headers.get('x-svc-supplier'), 'sim-us', 'rerank failed over');
      const t = await upload([{ name: 'file', value: new Blob([wav(0.5)]), filename: 'x.wav' }]);
      assert.equal(t.status, 200, JSON.stringify(t.body));
      assert.equal(t.headers.get('x-svc-supplier'), 'sim-us', 'transcription failed over, the spooled file sent again');
      const s = await fetch(`${base}/v1/audio/speech`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
        body: JSON.stringify({ model: 'tts-1', input: 'hello' }),
      });
      await s.arrayBuffer();
      assert.equal(s.headers.get('x-svc-supplier'), 'sim-us', 'speech failed over');
    } finally {
      primary.setFaults(undefined);
    }
  });

  test('every media request has its audit row: interface, model, supplier, cost', async () => {
    const audit = await eventually(
      () => admin(`/v1/manage/keys/${keyId}/audit?limit=200`),
      (r) => {
        const rows = (r.body.data as { interface: string; status: number; failover: boolean }[] | undefined) ?? [];
        return ['embeddings', 'rerank', 'audio.transcriptions', 'audio.speech'].every((i) =>
          rows.some((row) => row.interface === i && row.status === 200 && row.failover),
        );
      },
      'audit rows of each interface',
    );
    const rows = audit.body.data as {
      interface: string;
      model: string;
      supplier: string;
      cost_usd: number;
      status: number;
      failover: boolean;
      code: string | null;
    }[];
    const speech = rows.find((r) => r.interface === 'audio.speech' && r.status === 200 && !r.failover)!;
    assert.equal(speech.model, 'tts-1', 'model');
    assert.ok(speech.cost_usd > 0, 'speech has a cost');
    const failed = rows.filter((r) => r.failover && r.status === 200).map((r) => r.interface);
    for (const i of ['embeddings', 'rerank', 'audio.transcriptions', 'audio.speech'])
      assert.ok(failed.includes(i), `a failover row for ${i}`);
    const refused = rows.find((r) => r.status === 400 && r.code === 'capability_unsupported');
    assert.equal(refused, undefined, 'requests refused before routing write no row (no supplier was tried)');
  });
});

describe('a supplier answering JSON of the wrong shape', () => {
  let h: GatewayHarness;
  let broken: Server;
  let answer: string;

  beforeAll(async () => {
    broken = createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(answer));
    });
    await new Promise<void>((resolve) => broken.listen(0, '127.0.0.1', resolve));
    const port = (broken.address() as { port: number }).port;
    h = await startGatewayHarness(
      [
        { name: 'broken', region: 'EU', baseUrl: `http://127.0.0.1:${port}/v1`, models },
        { name: 'sim-eu', region: 'EU', models },
      ],
      { settings: { SVC_CIRCUIT_FAILURES: '100' } },
    );
  });
  afterAll(async () => {
    await h.close();
    await new Promise((resolve) => broken.close(resolve));
  });

  test('is a 502 upstream_invalid_response that fails over, never a 500', async () => {
    const key = await h.createKey();
    const post = async (path: string, body: unknown) => {
      const res = await fetch(`${h.gateway.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify(body),
      });
      return {
        status: res.status,
        supplier: res.headers.get('x-svc-supplier'),
        failover: res.headers.get('x-svc-failover'),
        text: await res.text(),
      };
    };
    for (const [shape, body] of [
      ['null', 'null'],
      ['a list', '[]'],
      ['null items', '{"data":[null],"results":[null]}'],
      ['no data', '{}'],
    ] as const) {
      answer = body;
      const e = await post('/v1/embeddings', { model: 'embed-small', input: 'x' });
      assert.deepEqual([e.status, e.supplier, e.failover], [200, 'sim-eu', 'true'], `embeddings after ${shape}: ${e.text.slice(0, 200)}`);
      const r = await post('/v1/rerank', { model: 'rerank-v1', query: 'q', documents: ['a'] });
      assert.deepEqual([r.status, r.supplier, r.failover], [200, 'sim-eu', 'true'], `rerank after ${shape}: ${r.text.slice(0, 200)}`);
    }
  });
});

describe('a supplier over-reporting what a transcription consumed', () => {
  // The reservation assumes the file's duration at the lowest plausible bitrate (1,000 bytes a
  // second); a supplier reporting 20,000 seconds for 20 KB was charged $2 against a $0.01 budget.
  let h: GatewayHarness;
  let liar: Server;
  let answer: unknown;

  beforeAll(async () => {
    liar = createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer)));
    });
    await new Promise<void>((resolve) => liar.listen(0, '127.0.0.1', resolve));
    const port = (liar.address() as { port: number }).port;
    const tokenPriced = {
      id: 'transcribe-tokens',
      usd_per_audio_minute: 0,
      input_usd_per_mtok: 6,
      output_usd_per_mtok: 10,
      capabilities: ['transcription'],
    };
    h = await startGatewayHarness([
      { name: 'liar', region: 'EU', baseUrl: `http://127.0.0.1:${port}/v1`, models: [...models, tokenPriced] },
    ]);
  });
  afterAll(async () => {
    await h.close();
    await new Promise((resolve) => liar.close(resolve));
  });

  test('is charged at most the bound its reservation assumed; a negative report is not a refund', async () => {
    const { id, secret } = await h.createKeyWithId({ budgetLimitUsd: 0.01, budgetPeriod: 'daily' });
    // 20,000 bytes of samples under a header claiming 1 byte a second.
    const file = Buffer.concat([wavHeader(20_000, 1), Buffer.alloc(20_000)]);
    const transcribe = async (model: string) => {
      const form = new FormData();
      form.append('model', model);
      form.append('file', new Blob([file], { type: 'audio/wav' }), 'slow.wav');
      const res = await fetch(`${h.gateway.url}/v1/audio/transcriptions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}` },
        body: form,
      });
      assert.equal(res.status, 200, await res.clone().text());
      await res.text();
      return Number(res.headers.get('x-svc-cost-usd'));
    };
    const boundSeconds = file.length / 1_000;

    answer = { text: 'hello', usage: { type: 'duration', seconds: 20_000 } };
    assert.equal(await transcribe('whisper'), Math.round((boundSeconds / 60) * 0.006 * 1e9) / 1e9, 'charged the bound, not $2');
    answer = { text: 'hello', usage: { type: 'duration', seconds: -500 } };
    assert.equal(await transcribe('whisper'), 0, 'a negative duration is nothing, not a credit');
    answer = { text: 'hello', usage: { type: 'tokens', input_tokens: 1e9, output_tokens: -3 } };
    const inputBound = Math.ceil(boundSeconds * 25);
    assert.equal(await transcribe('transcribe-tokens'), Math.round(inputBound * 6 * 1000) / 1e9, 'tokens within the bound');

    // Embeddings and rerank: within the inputs' bytes (and a few special tokens each).
    const post = async (path: string, body: unknown) => {
      const res = await fetch(`${h.gateway.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
        body: JSON.stringify(body),
      });
      assert.equal(res.status, 200, await res.clone().text());
      return (await res.json()) as { usage: Record<string, number> };
    };
    answer = { object: 'list', data: [{ index: 0, embedding: [0.5] }], usage: { prompt_tokens: 1e9 } };
    assert.deepEqual((await post('/v1/embeddings', { model: 'embed-small', input: 'hello' })).usage, {
      prompt_tokens: 5 + 4,
      total_tokens: 5 + 4,
    });
    answer = { results: [{ index: 0, relevance_score: 0.5 }], usage: { total_tokens: 1e9 } };
    assert.equal((await post('/v1/rerank', { model: 'rerank-v1', query: 'q', documents: ['abc'] })).usage.total_tokens, 3 + 1 + 8);

    await waitFor('five audited', async () => (await h.auditOf(id)).length === 5);
    const spent = (await h.auditOf(id)).reduce((sum, row) => sum + Number(row.cost_usd), 0);
    assert.ok(spent <= 0.01, `the budget of $0.01 is not overspent: ${spent}`);
  });
});
