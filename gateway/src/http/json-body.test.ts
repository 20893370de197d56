import { test } from 'vitest';
import assert from 'node:assert/strict';
import Fastify from 'fastify';
import { registerJsonBodyParser } from './json-body.js';

test('JSON has a parser of its own beside the catch-all (fastify caches only named parsers it found)', async () => {
  const app = Fastify();
  registerJsonBodyParser(app);
  assert.ok(app.hasContentTypeParser('application/json'));
  app.post('/', async (request) => ({ got: request.body }));
  for (const contentType of ['application/json', 'application/json; charset=utf-8', 'application/problem+json']) {
    const reply = await app.inject({ method: 'POST', url: '/', headers: { 'content-type': contentType }, payload: '{"a":1}' });
    assert.deepEqual(reply.json(), { got: { a: 1 } }, contentType);
  }
  await app.close();
});

test('a body not declared JSON in UTF-8 is 415 unsupported_media_type; an empty one needs no type', async () => {
  const app = Fastify();
  registerJsonBodyParser(app);
  app.setErrorHandler((error: Error & { code?: string; status?: number; param?: string; humanMessage?: string }, _request, reply) =>
    reply.code(error.status ?? 500).send({ code: error.code, param: error.param }),
  );
  app.post('/', async (request) => ({ got: request.body ?? null }));
  const accepted = ['application/json', 'APPLICATION/JSON; CHARSET=UTF-8', 'application/json;charset="utf-8"', 'application/vnd.x+json'];
  for (const contentType of accepted) {
    const reply = await app.inject({ method: 'POST', url: '/', headers: { 'content-type': contentType }, payload: '{"a":1}' });
    assert.deepEqual(reply.json(), { got: { a: 1 } }, contentType);
  }
  const refused = [
    'text/plain',
    'application/x-www-form-urlencoded',
    'application/json; charset=utf-16',
    'application/json; charset=latin1',
    'text/json',
  ];
  for (const contentType of refused) {
    const reply = await app.inject({ method: 'POST', url: '/', headers: { 'content-type': contentType }, payload: '{"a":1}' });
    assert.equal(reply.statusCode, 415, contentType);
    assert.deepEqual(reply.json(), { code: 'unsupported_media_type', param: 'content-type' }, contentType);
  }
  const empty = await app.inject({ method: 'POST', url: '/', headers: { 'content-type': 'text/plain' }, payload: '' });
  assert.deepEqual(empty.json(), { got: null });
  await app.close();
});

test('a body that is not UTF-8 is 400 invalid_json, never decoded into U+FFFD and passed on', async () => {
  const app = Fastify();
  registerJsonBodyParser(app);
  app.setErrorHandler((error: Error & { code?: string }, _request, reply) =>
    reply.code(400).send({ code: error.code, message: error.message }),
  );
  app.post('/', async (request) => ({ got: request.body }));
  const invalid = [
    Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0x61, 0x62, 0xff, 0xfe, 0xc3, 0x63, 0x64, 0x22, 0x7d]), // {"a":"ab\xFF\xFE\xC3cd"}
    Buffer.concat([Buffer.from('{"a":"'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('"}')]), // an encoded surrogate
    Buffer.concat([Buffer.from('{"a":"'), Buffer.from([0xc0, 0xaf]), Buffer.from('"}')]), // an overlong "/"
    Buffer.concat([Buffer.from('{"a":"x'), Buffer.from([0xe2, 0x82])]), // cut inside a character
  ];
  for (const payload of invalid) {
    const reply = await app.inject({ method: 'POST', url: '/', headers: { 'content-type': 'application/json' }, payload });
    assert.equal(reply.statusCode, 400, payload.toString('hex'));
    assert.equal(reply.json().code, 'invalid_json');
    assert.match(reply.json().message, /UTF-8/);
  }
  const valid = await app.inject({ method: 'POST', url: '/', headers: { 'content-type': 'application/json' }, payload: '{"a":"é€😀"}' });
  assert.deepEqual(valid.json(), { got: { a: 'é€😀' } });
  await app.close();
});

test('a compressed body is 415 unsupported_media_type, not invalid_json quoting its binary', async () => {
  const { gzipSync } = await import('node:zlib');
  const app = Fastify();
  registerJsonBodyParser(app);
  app.setErrorHandler((error: Error & { code?: string; status?: number; param?: string }, _request, reply) =>
    reply.code(error.status ?? 500).send({ code: error.code, param: error.param }),
  );
  app.post('/', async (request) => ({ got: request.body }));
  const gzipped = await app.inject({
    method: 'POST',
    url: '/',
    headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
    payload: gzipSync('{"a":1}'),
  });
  assert.equal(gzipped.statusCode, 415);
  assert.deepEqual(gzipped.json(), { code: 'unsupported_media_type', param: 'content-encoding' });
  const identity = await app.inject({
    method: 'POST',
    url: '/',
    headers: { 'content-type': 'application/json', 'content-encoding': 'identity' },
    payload: '{"a":1}',
  });
  assert.deepEqual(identity.json(), { got: { a: 1 } });
  // A transfer coding Node does not undo (it undoes chunked only) is refused the same way.
  const transferCoded = await app.inject({
    method: 'POST',
    url: '/',
    headers: { 'content-type': 'application/json', 'transfer-encoding': 'gzip, chunked' },
    payload: gzipSync('{"a":1}'),
  });
  assert.equal(transferCoded.statusCode, 415);
  assert.deepEqual(transferCoded.json(), { code: 'unsupported_media_type', param: 'transfer-encoding' });
  await app.close();
});

test('large bodies are parsed one at a time, each step in its own turn: a small request is not kept waiting behind them', async () => {
  // An outside probe sent 16 bodies of 8 MB at once: everything else waited 5–14 s behind their parsing.
  const app = Fastify({ bodyLimit: 10 * 1024 * 1024 });
  registerJsonBodyParser(app);
  const order: string[] = [];
  app.post('/', async (request) => {
    const { name } = request.body as { name: string };
    order.push(name);
    return { name };
  });
  const large = (name: string) => JSON.stringify({ name, parts: Array.from({ length: 120_000 }, () => ({ type: 'text', text: 'x' })) });
  const send = (payload: string) => app.inject({ method: 'POST', url: '/', headers: { 'content-type': 'application/json' }, payload });
  const bodies = ['L1', 'L2', 'L3'].map(large);
  assert.ok(
    bodies.every((b) => Buffer.byteLength(b) > 1024 * 1024),
    'each large body is over 1 MiB',
  );
  const replies = await Promise.all([...bodies.map(send), send(JSON.stringify({ name: 'small' }))]);
  assert.deepEqual(
    replies.map((r) => r.json().name),
    ['L1', 'L2', 'L3', 'small'],
  );
  assert.equal(order[0], 'small', `the small request is answered first: ${order.join(', ')}`);
  assert.deepEqual(order.slice(1), ['L1', 'L2', 'L3'], 'the large ones in their order');
  await app.close();
});

test('a large body sent over a real connection is parsed (the request stream ends once read; the socket is what tells a client left)', async () => {
  const app = Fastify({ bodyLimit: 10 * 1024 * 1024 });
  registerJsonBodyParser(app);
  app.post('/', async (request) => ({ items: (request.body as { items: unknown[] }).items.length }));
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  try {
    const body = JSON.stringify({ items: Array.from({ length: 200_000 }, (_, i) => `item ${i}`) });
    assert.ok(Buffer.byteLength(body) > 1024 * 1024);
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { items: 200_000 });
  } finally {
    await app.close();
  }
});
