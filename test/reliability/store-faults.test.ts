import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'vitest';
import { waitFor } from '../support/wait-for.js';
import { call, startFaultBed, type FaultBed } from './fault-harness.js';

// Issue 13 finding 4 and the fault tests of issue 13: the shared store (Redis) cut, and
// restarted without its data, while requests keep coming. Whatever happens to the store, every
// answered request has its audit row and its wallet debit, and no budget or wallet is overspent.

interface Outcome {
  key: 'payer' | 'plain';
  status: number;
  requestId: string;
  code: string | undefined;
}

interface Load {
  outcomes: Outcome[];
  /** When the oldest request still unanswered was sent (Infinity when none is). */
  oldestInFlight(): number;
  stop(): Promise<void>;
}

/** Concurrent callers that run until stop(); every answer is kept. */
function startLoad(base: string, keys: { payer: string; plain: string }, workers = 6): Load {
  const outcomes: Outcome[] = [];
  const sentAt: number[] = Array.from({ length: workers }, () => Infinity);
  let running = true;
  const worker = async (i: number) => {
    for (let n = 0; running; n++) {
      const which = (i + n) % 2 === 0 ? 'payer' : 'plain';
      sentAt[i] = Date.now();
      const response = await fetch(`${base}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${keys[which]}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: `hello ${which} ${n}` }], max_tokens: 16 }),
      });
      const body = (await response.json()) as { error?: { code?: string } };
      outcomes.push({ key: which, status: response.status, requestId: response.headers.get('x-request-id') ?? '', code: body.error?.code });
      sentAt[i] = Infinity;
    }
  };
  const done = Promise.all(Array.from({ length: workers }, (_, i) => worker(i)));
  return {
    outcomes,
    oldestInFlight: () => Math.min(...sentAt),
    stop: async () => {
      running = false;
      await done;
    },
  };
}

/** A decimal USD amount with up to 9 decimals as integer nano-USD, from its digits (no float). */
function nanoOf(decimal: string): number {
  const [whole = '0', fraction = ''] = decimal.split('.');
  return Number(whole) * 1e9 + Number(fraction.padEnd(9, '0').slice(0, 9));
}

/** Budget of the payer key and the funds of its wallet: both run out during the test. */
const budgetUsd = 0.0003;
const fundsUsd = 0.00025;

async function setUp(bed: FaultBed): Promise<{ payer: string; plain: string; payerKeyId: string }> {
  const payerKey = await call(bed.gateway.url, '/v1/manage/keys', bed.adminKey, {
    name: 'payer',
    budget_limit: budgetUsd,
    budget_period: 'daily',
    payer: 'project:faults',
  });
  assert.equal(payerKey.status, 201, JSON.stringify(payerKey.body));
  const plainKey = await call(bed.gateway.url, '/v1/manage/keys', bed.adminKey, { name: 'plain' });
  assert.equal(
    (await call(bed.gateway.url, '/v1/manage/wallets/project:faults/credits', bed.adminKey, { amount_usd: fundsUsd, reason: 'fault test' }))
      .status,
    201,
  );
  return { payer: payerKey.body.key, plain: plainKey.body.key, payerKeyId: payerKey.body.id };
}

/** Waits for `count` more answers of `kind` than there are now. */
async function answersMore(outcomes: Outcome[], what: string, count: number, matches: (o: Outcome) => boolean): Promise<void> {
  const start = outcomes.filter(matches).length;
  await waitFor(what, () => outcomes.filter(matches).length >= start + count, 40_000);
}

/** Every answered request is in the audit log, each payer request debited once at its cost; nothing overspent. */
async function assertBooksBalance(bed: FaultBed, outcomes: Outcome[], payerKeyId: string, shownBudgetUsed?: number): Promise<void> {
  const knex = bed.database.knex;
  const served = outcomes.filter((o) => o.status === 200);
  const servedIds = served.map((o) => o.requestId);
  await waitFor(
    'every served request to have its audit row',
    async () => Number((await knex('audit_log').whereIn('request_id', servedIds).count({ n: '*' }))[0]!.n) === servedIds.length,
    40_000,
    100,
  );
  const payerIds = served.filter((o) => o.key === 'payer').map((o) => o.requestId);
  const rows = (await knex('audit_log').whereIn('request_id', payerIds).select('request_id', 'cost_usd')) as {
    request_id: string;
    cost_usd: string;
  }[];
  await waitFor(
    'every served payer request to be debited',
    async () =>
      Number((await knex('wallet_entries').whereIn('request_id', payerIds).count({ n: '*' }))[0]!.n) ===
      rows.filter((r) => Number(r.cost_usd) > 0).length,
    40_000,
    100,
  );
  // The ledger and the audit log agree to the nano-dollar (issue 13 finding 10).
  const debits = (await knex('wallet_entries').whereIn('request_id', payerIds).select('request_id', 'amount_nano')) as {
    request_id: string;
    amount_nano: string;
  }[];
  const costByRequest = new Map(rows.map((r) => [r.request_id, r.cost_usd]));
  for (const debit of debits)
    assert.equal(-Number(debit.amount_nano), nanoOf(costByRequest.get(debit.request_id)!), `debit of ${debit.request_id}`);
  const duplicates = (await knex('wallet_entries')
    .whereNotNull('request_id')
    .groupBy('request_id')
    .havingRaw('count(*) > 1')
    .select('request_id')) as unknown[];
  assert.equal(duplicates.length, 0, 'no request debited twice');

  // No overspend: the key's whole audited spend fits its budget, the wallet never went below zero.
  const spent = (await knex('audit_log').where('key_id', payerKeyId).sum({ total: 'cost_usd' }))[0] as { total: string | null };
  assert.ok(Number(spent.total ?? 0) <= budgetUsd + 1e-9, `spent ${spent.total} of a ${budgetUsd} budget`);
  const wallet = await call(bed.gateway.url, '/v1/manage/wallets/project:faults', bed.adminKey);
  assert.ok(wallet.body.balance_usd >= 0, `wallet balance ${wallet.body.balance_usd}`);
  // The budget shown never falls below the audited spend when the store lost or missed it: an
  // under-count would let the key spend past its budget. It may stand above it by whole
  // reservations the faults left in the counter (a reply lost in the cut, a rebuild racing a
  // settlement): that errs on the safe side and is the known gap in docs/reliability.md
  // ("Budget counters after a fault"); exact equality after faults is the follow-up.
  const budgetUsed = shownBudgetUsed ?? (await call(bed.gateway.url, `/v1/manage/keys/${payerKeyId}`, bed.adminKey)).body.budget_used;
  const shownNano = Math.round(budgetUsed * 1e9);
  const auditedNano = nanoOf(spent.total ?? '0');
  assert.ok(shownNano >= auditedNano, `budget_used ${budgetUsed} fell below the audited ${spent.total}`);
  assert.ok(
    shownNano <= Math.round(budgetUsd * 1e9) + auditedNano,
    `budget_used ${budgetUsed} is out of all proportion to the audited ${spent.total}`,
  );
}

describe('store faults under load', () => {
  let bed: FaultBed | undefined;
  afterEach(async () => {
    await bed?.close();
    bed = undefined;
  });

  test('the store cut and restored: answered requests keep their audit rows and debits, nothing is overspent, refusals are 503', async () => {
    bed = await startFaultBed();
    const keys = await setUp(bed);
    const load = startLoad(bed.gateway.url, keys);
    try {
      await answersMore(load.outcomes, 'served requests before the cut', 10, (o) => o.status === 200);
      // The cut lands while a payer request is at the supplier, so its settlement meets the
      // store down and is owed: the books must still balance once the store is back.
      const sim = bed.simulator;
      const seen = sim.requests.length;
      sim.setFaults({ latencyMs: 1_000 });
      await waitFor('a payer request at the supplier', () =>
        sim.requests.slice(seen).some((r) => JSON.stringify(r.body).includes('hello payer')),
      );
      await bed.outage.cut();
      await answersMore(load.outcomes, 'plain requests served during the cut', 10, (o) => o.key === 'plain' && o.status === 200);
      sim.setFaults(undefined);
      const latencyCleared = Date.now();
      await waitFor('the requests the latency held to be answered', () => load.oldestInFlight() >= latencyCleared);
      await bed.outage.restore();
      // Read right after the store answers again (not a retry period later): the settlements
      // owed since the cut must be in by then, or the budget shows their whole reservations.
      await answersMore(load.outcomes, 'payer requests the store answered after the cut', 3, (o) => o.key === 'payer' && o.status !== 503);
    } finally {
      await load.stop();
    }
    const budgetUsed = (await call(bed.gateway.url, `/v1/manage/keys/${keys.payerKeyId}`, bed.adminKey)).body.budget_used as number;
    const failures = load.outcomes.filter((o) => o.status >= 500);
    assert.ok(
      failures.every((o) => o.status === 503 && o.code === 'service_unavailable'),
      JSON.stringify(failures.slice(0, 3)),
    );
    await assertBooksBalance(bed, load.outcomes, keys.payerKeyId, budgetUsed);
  });

  test('the store restarted empty: lost audit entries are written from the journal, budgets and wallets are rebuilt from PostgreSQL', async () => {
    bed = await startFaultBed();
    const keys = await setUp(bed);
    const load = startLoad(bed.gateway.url, keys);
    try {
      await answersMore(load.outcomes, 'payer requests served before the flush', 12, (o) => o.key === 'payer' && o.status === 200);
      await bed.outage.flush();
      await answersMore(load.outcomes, 'payer requests answered after the flush', 40, (o) => o.key === 'payer');
    } finally {
      await load.stop();
    }
    assert.ok(
      load.outcomes.some((o) => o.code === 'budget_exceeded' || o.code === 'billing_limit_reached'),
      'the load reached a limit',
    );
    assert.deepEqual(
      load.outcomes.filter((o) => o.status >= 500),
      [],
    );
    await assertBooksBalance(bed, load.outcomes, keys.payerKeyId);
  });
});
