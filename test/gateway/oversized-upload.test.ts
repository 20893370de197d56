// A transcription over the 25 MB limit, sent through the official openai package, must reach the
// caller as the gateway's answer — 413 request_too_large, an APIError the SDK does not retry — and
// never as a connection error after the SDK re-sent the whole upload twice. The gateway answers
// as soon as the limit is passed, then reads and discards the rest of the upload (up to a bound)
// before closing, so the client is not reset while it is still sending.
import { connect } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, onTestFinished, test } from 'vitest';
import OpenAI, { toFile } from 'openai';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.js';
import { silentWav } from '../support/wav.js';

/**
 * A plain HTTP/1.1 client that sends a whole request before reading anything: `send` writes it
 * (`write` waits for the socket to drain; `stopped()` says the connection failed or was closed),
 * then the client reads until the connection closes. What came back, and the socket's error.
 */
async function uploadWholeThenRead(
  port: number,
  send: (write: (data: Buffer | string) => Promise<void>, stopped: () => boolean) => Promise<void>,
): Promise<{ received: string; failure: Error | undefined }> {
  const socket = connect({ host: '127.0.0.1', port, allowHalfOpen: true });
  onTestFinished(() => void socket.destroy());
  let received = '';
  let failure: Error | undefined;
  socket.setEncoding('latin1');
  socket.pause(); // read nothing until the upload is sent
  socket.on('error', (e) => (failure ??= e));
  const closed = new Promise((resolve) => socket.once('close', resolve));
  await new Promise<void>((resolve) => socket.once('connect', resolve));
  const write = async (data: Buffer | string) => {
    if (socket.destroyed) return;
    if (!socket.write(data)) await new Promise((r) => socket.once('drain', r).once('close', r));
  };
  await send(write, () => failure !== undefined || socket.destroyed);
  socket.end();
  socket.on('data', (text: string) => (received += text));
  socket.resume();
  await closed;
  return { received, failure };
}

describe('an oversized upload through the openai SDK', () => {
  let h: GatewayHarness;
  let key: string;

  beforeAll(async () => {
    h = await startGatewayHarness([
      {
        name: 'sim-eu',
        region: 'EU',
        models: [
          { id: 'whisper', upstream: 'whisper-1', usd_per_audio_minute: 0.006, capabilities: ['transcription'] },
          { id: 'chat', upstream: 'gpt-4o-mini', input_usd_per_mtok: 1, output_usd_per_mtok: 2 },
        ],
      },
    ]);
    key = await h.createKey();
  });
  afterAll(async () => {
    await h?.close();
  });

  /**
   * An openai client that would retry twice, and how many of its requests reached the gateway
   * (the SDK also fetches a data: URL to probe its FormData support).
   */
  const countingClient = () => {
    let requests = 0;
    const countingFetch: typeof fetch = (input, init) => {
      if (String(input).startsWith(h.gateway.url)) requests++;
      return fetch(input, init);
    };
    const client = new OpenAI({ baseURL: `${h.gateway.url}/v1`, apiKey: key, maxRetries: 2, fetch: countingFetch });
    return { client, requests: () => requests };
  };

  test('26 MB: the SDK raises APIError 413 request_too_large after one request, not a connection error after three', async () => {
    const { client, requests } = countingClient();
    const file = await toFile(silentWav(26 * 1024 * 1024), 'big.wav', { type: 'audio/wav' });
    const error = await client.audio.transcriptions.create({ file, model: 'whisper' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(error).not.toBeInstanceOf(OpenAI.APIConnectionError);
    const apiError = error as InstanceType<typeof OpenAI.APIError>;
    expect(apiError.status).toBe(413);
    expect(apiError.code).toBe('request_too_large');
    expect(requests()).toBe(1);
  });

  test('a client that sends its whole upload before reading gets the 413, not a reset', async () => {
    // A plain HTTP/1.1 client: it sends all 48 MB (at ~25 MB/s, about a second past the point where
    // the gateway answers at 25 MB — a slow link, or a busy machine) and only then reads. The
    // gateway must keep reading and discarding meanwhile: destroying the connection while the
    // client still sends resets it, and a reset loses the answer the client has not read yet.
    // (The pacing is the slow client, not a wait for anything.)
    const boundary = 'slowclient';
    const total = 48 * 1024 * 1024;
    const chunk = Buffer.alloc(256 * 1024);
    const part = `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="big.wav"\r\ncontent-type: audio/wav\r\n\r\n`;
    const length = Buffer.byteLength(part) + 44 + total + Buffer.byteLength(`\r\n--${boundary}--\r\n`);
    const { received, failure } = await uploadWholeThenRead(h.gateway.port, async (write, stopped) => {
      await write(
        `POST /v1/audio/transcriptions HTTP/1.1\r\nhost: gateway\r\nauthorization: Bearer ${key}\r\n` +
          `content-type: multipart/form-data; boundary=${boundary}\r\ncontent-length: ${length}\r\n\r\n${part}`,
      );
      await write(silentWav(0));
      for (let sent = 0; sent < total && !stopped(); sent += chunk.length) {
        await write(chunk);
        await delay(10);
      }
      await write(`\r\n--${boundary}--\r\n`);
    });
    expect(failure?.message).toBeUndefined();
    expect(received).toMatch(/^HTTP\/1\.1 413 /);
    expect(received).toContain('"code":"request_too_large"');
  });

  test('an 11 MiB chat request: the SDK raises APIError 413 after one request, not a connection error', async () => {
    const { client, requests } = countingClient();
    const error = await client.chat.completions
      .create({ model: 'chat', messages: [{ role: 'user', content: 'x'.repeat(11 * 1024 * 1024) }] })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(error).not.toBeInstanceOf(OpenAI.APIConnectionError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(413);
    expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe('request_too_large');
    expect(requests()).toBe(1);
  });

  for (const framing of ['content-length', 'chunked'] as const) {
    test(`a JSON body over the limit (${framing}), sent whole before reading: the 413, not a reset`, async () => {
      const total = 11 * 1024 * 1024;
      const chunk = Buffer.alloc(256 * 1024, 'x');
      const head = '{"model":"chat","messages":[{"role":"user","content":"';
      const tail = '"}]}';
      const length = head.length + total + tail.length;
      const frame = (data: Buffer | string) =>
        framing === 'chunked' ? `${Buffer.byteLength(data).toString(16)}\r\n${data.toString()}\r\n` : data;
      const { received, failure } = await uploadWholeThenRead(h.gateway.port, async (write, stopped) => {
        await write(
          `POST /v1/chat/completions HTTP/1.1\r\nhost: gateway\r\nauthorization: Bearer ${key}\r\ncontent-type: application/json\r\n` +
            (framing === 'chunked' ? 'transfer-encoding: chunked\r\n\r\n' : `content-length: ${length}\r\n\r\n`),
        );
        await write(frame(head));
        for (let sent = 0; sent < total && !stopped(); sent += chunk.length) await write(frame(chunk));
        await write(frame(tail));
        if (framing === 'chunked') await write('0\r\n\r\n');
      });
      expect(failure?.message).toBeUndefined();
      expect(received).toMatch(/^HTTP\/1\.1 413 /);
      expect(received).toContain('"code":"request_too_large"');
    });
  }
});
