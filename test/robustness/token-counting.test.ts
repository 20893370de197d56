// Finding 1 of issue 13: token counting was quadratic in an unbroken run of text and ran on the
// serving thread before any limit, so one count_tokens of 100 KB of one letter froze every request
// (/health included) for seconds. Counting is now linear, sliced on a shared lane, capped by the
// model's context, and embeddings tokenize only once the key's limits admitted the request.
import { afterAll, beforeAll, describe, onTestFinished, test } from 'vitest';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import assert from 'node:assert/strict';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.js';
import { assertCatalogueError, send } from './support.js';

describe('token counting never holds the serving thread', () => {
  let h: GatewayHarness;
  let base: string;
  let key: string;

  beforeAll(async () => {
    h = await startGatewayHarness([
      {
        name: 'sim-eu',
        region: 'EU',
        models: [
          { id: 'gpt-4o-mini' },
          { id: 'small-context', context_window: 1_000 },
          { id: 'embed-small', input_usd_per_mtok: 0.02, output_usd_per_mtok: 0, capabilities: ['embeddings'] },
        ],
      },
    ]);
    base = h.gateway.url;
    key = await h.createKey();
  });
  afterAll(async () => {
    await h?.close();
  });

  test('/health is answered while a worst-case count_tokens is being served, and the count finishes', async () => {
    // Long unbroken runs, each distinct (the tokenizer caches repeated pieces): seconds of
    // quadratic work before; then 2 MB of distinct words, linear either way — many slices now.
    const runs = Array.from({ length: 8 }, (_, i) => String.fromCharCode(0x4e00 + i).repeat(20_000));
    let seed = 1;
    const letter = () => String.fromCharCode(97 + ((seed = (seed * 1_103_515_245 + 12_345) & 0x7fffffff) % 26));
    const words = Array.from({ length: 300_000 }, () => letter() + letter() + letter() + letter() + letter()).join(' ');
    const messages = [...runs, words].map((content) => ({ role: 'user', content }));

    // The order in which route handlers start and finish, seen from inside the gateway (fastify's
    // diagnostics channel): no wall clock, and no doubt whether a probe overlapped the count.
    const events: string[] = [];
    const started = (message: unknown) => events.push(`start ${(message as { route: { url: string } }).route.url}`);
    const ended = (message: unknown) => events.push(`end ${(message as { route: { url: string } }).route.url}`);
    subscribe('tracing:fastify.request.handler:start', started);
    subscribe('tracing:fastify.request.handler:asyncEnd', ended);
    onTestFinished(() => {
      unsubscribe('tracing:fastify.request.handler:start', started);
      unsubscribe('tracing:fastify.request.handler:asyncEnd', ended);
    });

    let bigDone = false;
    const big = send(base, '/v1/messages/count_tokens', { key, body: { model: 'gpt-4o-mini', messages } }).finally(() => {
      bigDone = true;
    });
    while (!bigDone) {
      const health = await send(base, '/health');
      assert.equal(health.status, 200);
    }
    const reply = await big;
    assert.equal(reply.status, 200, reply.text.slice(0, 300));
    const counted = (JSON.parse(reply.text) as { input_tokens: number }).input_tokens;
    assert.ok(counted > 8 * 20_000, `counted ${counted}`);

    const countStart = events.indexOf('start /v1/messages/count_tokens');
    const countEnd = events.indexOf('end /v1/messages/count_tokens');
    assert.ok(countStart >= 0 && countEnd > countStart, events.join(', '));
    const probesDuring = events.slice(countStart, countEnd).filter((e) => e === 'start /health').length;
    assert.ok(probesDuring >= 1, `no /health request was served while the count ran (${events.length} handler events)`);
  });

  test('count_tokens refuses an input over the model context with a 400, counting no further than the limit', async () => {
    const reply = await send(base, '/v1/messages/count_tokens', {
      key,
      body: { model: 'small-context', messages: [{ role: 'user', content: 'a'.repeat(100_000) }] },
    });
    assertCatalogueError(reply, 400, 'context_length');
    assert.match(reply.text, /more than 1000 tokens/);
  });

  test('an over-long embeddings input is refused after counting only to the limit', async () => {
    const reply = await send(base, '/v1/embeddings', { key, body: { model: 'embed-small', input: 'a'.repeat(60_000) } });
    assertCatalogueError(reply, 400, 'invalid_input');
    assert.match(reply.text, /input has \d+ tokens or more; each input may have at most 2048 tokens/);
  });

  test('of several long embeddings inputs, the first over the limit in input order is the one named', async () => {
    // Counted in input order, one at a time (each count takes its turn in the counter's shared lane).
    const fits = 'word '.repeat(500); // > 2,048 bytes, ~500 tokens: counted, and within the limit
    const input = [fits, 'b'.repeat(3_000) + ' ' + 'x '.repeat(3_000), 'a'.repeat(60_000), fits];
    const reply = await send(base, '/v1/embeddings', { key, body: { model: 'embed-small', input } });
    assertCatalogueError(reply, 400, 'invalid_input');
    assert.match(reply.text, /input\[1\] has \d+ tokens or more; each input may have at most 2048 tokens/);
  });

  test("a key's budget and rate limit refuse an embeddings request before its inputs are tokenized", async () => {
    const noBudget = await h.createKey({ budgetLimitUsd: 0 });
    const refused = await send(base, '/v1/embeddings', { key: noBudget, body: { model: 'embed-small', input: 'a'.repeat(60_000) } });
    assertCatalogueError(refused);
    assert.equal(refused.status, 402, refused.text);

    const onePerMinute = await h.createKey({ rateLimitRpm: 1 });
    const first = await send(base, '/v1/embeddings', { key: onePerMinute, body: { model: 'embed-small', input: 'a'.repeat(60_000) } });
    assertCatalogueError(first, 400, 'invalid_input');
    const second = await send(base, '/v1/embeddings', { key: onePerMinute, body: { model: 'embed-small', input: 'a'.repeat(60_000) } });
    assertCatalogueError(second, 429);
  });
});
