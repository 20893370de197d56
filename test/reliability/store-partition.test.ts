import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'vitest';
import { waitFor } from '../support/wait-for.js';
import { call, chatAnswer, startFaultBed, type FaultBed } from './fault-harness.js';

// Redis partitioned away rather than refused: connections are accepted or stay open and nothing
// is ever answered (a frozen Redis, a proxy in front of a dead one, a network dropping packets).
// ioredis alone waited for as long as that lasted, so every request touching the store hung.
// Each store command is now bounded by SVC_STORE_TIMEOUT_MS (core/store/redis-store.ts): keys
// without limits are served (their audit records spilled and written to PostgreSQL directly),
// keys with a budget or payer get 503, and all are served again once Redis answers.
// Real Redis only: the in-process store has no connection to partition.

/** The store timeout of this bed: small, so the test is quick; the bound below is far above it. */
const storeTimeoutMs = 400;
/** A request still unanswered after this is hung (the bound is about two store timeouts). */
const hungAfterMs = 10_000;

describe.skipIf(!process.env.REDIS_URL)('store partitioned (real Redis)', () => {
  let bed: FaultBed | undefined;
  afterEach(async () => {
    await bed?.close();
    bed = undefined;
  });

  test('stopping while Redis answers nothing finishes: it waited for Redis for as long as it was frozen', async () => {
    bed = await startFaultBed({ storeTimeoutMs });
    const base = bed.gateway.url;
    const limited = await call(base, '/v1/manage/keys', bed.adminKey, { name: 'limited', budget_limit: 10, budget_period: 'daily' });
    assert.equal((await chatAnswer(base, limited.body.key, hungAfterMs)).status, 200);
    bed.outage.partition!();
    assert.equal((await chatAnswer(base, limited.body.key, hungAfterMs)).status, 503);
    const hung = new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 60_000).unref());
    assert.equal(await Promise.race([bed.stopGateways().then(() => 'stopped' as const), hung]), 'stopped');
  });

  test('requests are answered while Redis answers nothing: plain keys served with their audit rows, limited keys 503; all served once it is back', async () => {
    bed = await startFaultBed({ storeTimeoutMs });
    const base = bed.gateway.url;
    const plain = await call(base, '/v1/manage/keys', bed.adminKey, { name: 'plain' });
    const limited = await call(base, '/v1/manage/keys', bed.adminKey, { name: 'limited', budget_limit: 10, budget_period: 'daily' });
    assert.equal(plain.status, 201, JSON.stringify(plain.body));
    assert.equal(limited.status, 201, JSON.stringify(limited.body));
    assert.equal((await chatAnswer(base, limited.body.key, hungAfterMs)).status, 200);

    bed.outage.partition!();
    const [plainDuring, limitedDuring] = await Promise.all([
      Promise.all(Array.from({ length: 4 }, () => chatAnswer(base, plain.body.key, hungAfterMs))),
      Promise.all(Array.from({ length: 4 }, () => chatAnswer(base, limited.body.key, hungAfterMs))),
    ]);
    // Then one after another: the connections made again during the partition answer nothing either.
    for (let i = 0; i < 3; i++) {
      plainDuring.push(await chatAnswer(base, plain.body.key, hungAfterMs));
      limitedDuring.push(await chatAnswer(base, limited.body.key, hungAfterMs));
    }
    assert.deepEqual(
      plainDuring.map((a) => a.status),
      plainDuring.map(() => 200),
      'a key without limits needs no store to be served',
    );
    for (const answer of limitedDuring) {
      assert.equal(answer.status, 503, JSON.stringify(answer));
      assert.equal(answer.code, 'service_unavailable');
      assert.equal(answer.retryAfter, '2');
    }

    bed.outage.heal!();
    await waitFor(
      'the limited key to be served again',
      async () => (await chatAnswer(base, limited.body.key, hungAfterMs)).status === 200,
      20_000,
      100,
    );

    // Every request served during the partition has its audit row: spilled, then written directly.
    const servedIds = plainDuring.map((a) => a.requestId);
    await waitFor(
      'the audit rows of the requests served during the partition',
      async () =>
        Number((await bed!.database.knex('audit_log').whereIn('request_id', servedIds).count({ n: '*' }))[0]!.n) === servedIds.length,
      20_000,
      100,
    );

    // Nothing refused during the partition reserved anything afterwards: once every answer is
    // settled and written, the budget shows exactly the audited spend of the limited key (a
    // timed-out enforcement script sent when the connection came back would show above it).
    const auditedNano = async () => {
      const [row] = (await bed!.database.knex('audit_log').where('key_id', limited.body.id).sum({ total: 'cost_usd' })) as {
        total: string | null;
      }[];
      return Math.round(Number(row?.total ?? 0) * 1e9);
    };
    let shown = 0;
    let audited = 0;
    await waitFor(
      'the budget shown to equal the audited spend of the limited key',
      async () => {
        shown = Math.round(((await call(base, `/v1/manage/keys/${limited.body.id}`, bed!.adminKey)).body.budget_used as number) * 1e9);
        audited = await auditedNano();
        return audited > 0 && shown === audited;
      },
      20_000,
      100,
    ).catch((error: unknown) => {
      throw new Error(`budget_used ${shown} nano-USD against ${audited} audited`, { cause: error });
    });
  });
});
