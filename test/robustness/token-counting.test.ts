// Finding 1 of issue 13: token counting was quadratic in an unbroken run of text and ran on the
// serving thread before any limit, so one count_tokens of 100 KB of one letter froze every request
// (/health included) for seconds. Counting is now linear, sliced on a shared lane, capped by the
// model's context, and embeddings tokenize only once the key's limits admitted the request.
import { afterAll, beforeAll, describe, test } from 'vitest';
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
    // 40 runs of 30 KB of one letter: seconds of quadratic work each before; linear and sliced now.
    const run = 'a'.repeat(30_000);
    const messages = Array.from({ length: 40 }, () => ({ role: 'user', content: run }));
    let bigDone = false;
    const big = send(base, '/v1/messages/count_tokens', { key, body: { model: 'gpt-4o-mini', messages } }).finally(() => {
      bigDone = true;
    });
    // Health probes go out while the big request is in flight; at least one must come back
    // before it finishes (on a frozen thread every probe waits for the count to end).
    let answeredDuring = 0;
    while (!bigDone) {
      const health = await send(base, '/health');
      assert.equal(health.status, 200);
      if (!bigDone) answeredDuring++;
    }
    const reply = await big;
    assert.equal(reply.status, 200, reply.text.slice(0, 300));
    const counted = (JSON.parse(reply.text) as { input_tokens: number }).input_tokens;
    // o200k_base makes one token of every 8 letters of a run; pieces keep that exact.
    assert.equal(counted, 40 * (30_000 / 8 + 3));
    assert.ok(answeredDuring >= 1, 'a health probe was answered while the count was running');
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
