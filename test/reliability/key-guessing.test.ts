import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'vitest';
import { generateSecret } from '../../core/keys/index.js';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.js';
import { call, chat } from './fault-harness.js';

// Issue 13 finding 9: requests with guessed keys must not each cost a PostgreSQL query.

describe('guessed keys', () => {
  let harness: GatewayHarness | undefined;
  afterEach(async () => {
    await harness?.close();
    harness = undefined;
  });

  test('a flood of distinct random well-formed keys is refused with few key look-ups in PostgreSQL; real keys still work at once', async () => {
    harness = await startGatewayHarness();
    const base = harness.gateway.url;
    let keyQueries = 0;
    const count = (query: { sql?: string }) => {
      if (query.sql?.includes('"api_keys"')) keyQueries++;
    };
    harness.database.knex.on('query', count);
    try {
      const guesses = Array.from({ length: 300 }, () => generateSecret('managed'));
      for (let i = 0; i < guesses.length; i += 30) {
        const answers = await Promise.all(guesses.slice(i, i + 30).map((key) => chat(base, key)));
        for (const answer of answers) assert.equal(answer.body?.error?.code, 'invalid_api_key');
      }
    } finally {
      harness.database.knex.off('query', count);
    }
    assert.ok(keyQueries <= 30, `${keyQueries} key look-ups for 300 guessed keys`);

    // A key written straight to the table (no announcement reached this gateway) works at once…
    const direct = await harness.createKey();
    assert.equal((await chat(base, direct)).status, 200);
    // …and so does one created through another replica.
    const replica = await harness.startReplica();
    const created = await call(replica.url, '/v1/manage/keys', harness.adminKey, { name: 'elsewhere' });
    assert.equal((await chat(base, created.body.key)).status, 200);
  });
});
