import { test } from 'vitest';
import assert from 'node:assert/strict';
import Fastify from 'fastify';
import { registerJsonBodyParser } from './json-body.js';

test('JSON has a parser of its own beside the catch-all (fastify caches only named parsers it found)', async () => {
  const app = Fastify();
  registerJsonBodyParser(app);
  assert.ok(app.hasContentTypeParser('application/json'));
  app.post('/', async (request) => ({ got: request.body }));
  for (const contentType of ['application/json', 'application/json; charset=utf-8', 'text/plain']) {
    const reply = await app.inject({ method: 'POST', url: '/', headers: { 'content-type': contentType }, payload: '{"a":1}' });
    assert.deepEqual(reply.json(), { got: { a: 1 } }, contentType);
  }
  await app.close();
});
