import { once } from 'node:events';
import net from 'node:net';
import { Readable } from 'node:stream';
import { Agent } from 'undici';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { bodyChunks } from './body-chunks.js';

/** One HTTP/1.1 chunk of a chunked body. */
const chunked = (text: string) => `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;

/**
 * A supplier on raw TCP that sends its status line and a first event, then — once the test says
 * so — two more events and drops the connection with the body unfinished (no last chunk).
 */
let server: net.Server;
let origin: string;
const agent = new Agent();
let cutNow: () => void = () => undefined;
beforeAll(async () => {
  server = net.createServer((socket) => {
    socket.once('data', () => {
      socket.write('HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n');
      socket.write(chunked('data: 1\n\n'));
      cutNow = () => socket.write(chunked('data: 2\n\ndata: 3\n\n'), () => socket.destroy());
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  origin = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
});
afterAll(async () => {
  await agent.close();
  await new Promise((resolve) => server.close(resolve));
});

test('the events that came with a cut are read before the failure, though the relay was busy when they came', async () => {
  const { body } = await agent.request({ origin, path: '/', method: 'POST', body: '{}' });
  const chunks = bodyChunks(body);
  const first = await chunks.next();
  expect(String(first.value)).toBe('data: 1\n\n');
  // While the relay is busy (a client to wait for), the rest arrives and the connection drops:
  // undici destroys the body — Node's own iterator of it then gave nothing more, only the error.
  cutNow();
  if (!body.destroyed) await new Promise((resolve) => body.once('close', resolve));
  let rest = '';
  const failure = await (async () => {
    for await (const chunk of chunks) rest += String(chunk);
  })().then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(rest).toBe('data: 2\n\ndata: 3\n\n');
  expect(failure).toBeInstanceOf(Error);
});

test('reading starts when called: a cut before the first next() (the relay still waiting) loses nothing', async () => {
  const { body } = await agent.request({ origin, path: '/', method: 'POST', body: '{}' });
  const chunks = bodyChunks(body);
  cutNow();
  if (!body.destroyed) await new Promise((resolve) => body.once('close', resolve));
  let read = '';
  await expect(
    (async () => {
      for await (const chunk of chunks) read += String(chunk);
    })(),
  ).rejects.toBeInstanceOf(Error);
  expect(read).toBe('data: 1\n\ndata: 2\n\ndata: 3\n\n');
});

test('a body that ends is read whole, then the end', async () => {
  const parts = [Buffer.from('a'), Buffer.from('b'), Buffer.from('c')];
  let read = '';
  for await (const chunk of bodyChunks(Readable.from(parts))) read += String(chunk);
  expect(read).toBe('abc');
});

test('reading pauses once the limit is ahead of the relay, and goes on as the relay catches up', async () => {
  const body = new Readable({ read() {} });
  const chunks = bodyChunks(body, 10);
  const first = chunks.next();
  body.push(Buffer.alloc(4));
  expect((await first).value).toHaveLength(4);
  body.push(Buffer.alloc(6));
  body.push(Buffer.alloc(6));
  expect(body.isPaused()).toBe(true); // 12 bytes ahead of a relay that took none of them
  await chunks.next();
  await chunks.next();
  expect(body.isPaused()).toBe(false);
  body.push(null);
  expect((await chunks.next()).done).toBe(true);
});

test('leaving early lets go of the body, as Node’s iterator does', async () => {
  const body = new Readable({ read() {} });
  body.push(Buffer.from('x'));
  for await (const _chunk of bodyChunks(body)) break;
  expect(body.destroyed).toBe(true);
});

test('a body destroyed before its end is a failure, not a clean end', async () => {
  const body = new Readable({ read() {} });
  const chunks = bodyChunks(body);
  body.push(Buffer.from('x'));
  expect(String((await chunks.next()).value)).toBe('x');
  body.destroy();
  await expect(chunks.next()).rejects.toMatchObject({ code: 'ERR_STREAM_PREMATURE_CLOSE' });
});
