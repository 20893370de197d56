// Management API, enforcement (budgets, rate limits, payer wallets) and the audit log, through
// the gateway's HTTP interface: real PostgreSQL and Redis when DATABASE_URL / REDIS_URL are set.
import { afterAll, beforeAll, describe, test } from 'vitest';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { eventually, expectError, type Reply } from '../support/http-assertions.js';
import { waitFor } from '../support/wait-for.js';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.js';

async function call(base: string, method: string, path: string, token: string | undefined, body?: unknown): Promise<Reply> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? (JSON.parse(text) as Reply['body']) : {} };
}

const chatBody = (content = 'hello') => ({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }], max_tokens: 20 });

describe('Management API', () => {
  let h: GatewayHarness;
  let base: string;
  const admin = (method: string, path: string, body?: unknown) => call(base, method, path, h.adminKey, body);

  beforeAll(async () => {
    h = await startGatewayHarness([
      { name: 'sim-eu', region: 'EU' },
      { name: 'sim-us', region: 'US' },
    ]);
    base = h.gateway.url;
  });
  afterAll(async () => {
    await h.close();
  });

  test('only the admin key may manage keys', async () => {
    expectError(await call(base, 'GET', '/v1/manage/keys', undefined), 401, 'missing_api_key');
    expectError(await call(base, 'GET', '/v1/manage/keys', 'svc-admin-wrongwrongwrongwrongwrongwrongwrong12'), 401, 'invalid_api_key');
    const key = await h.createKey();
    expectError(await call(base, 'GET', '/v1/manage/keys', key), 403, 'permission_denied');
  });

  test('a key whose payer names a user id no account can have is still served (no 500 on its look-up)', async () => {
    // The payer is free text here; the gateway reads a `user:<id>` payer's credit limit when it
    // loads the key, and an id past the users table's integer range must not reach PostgreSQL.
    const key = await h.createKey({ payerId: 'user:9999999999' });
    const res = await call(base, 'POST', '/v1/chat/completions', key, {
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'hi' }],
    });
    // Its wallet is empty: refused as such, like any other payer.
    expectError(res, 403, 'billing_limit_reached');
  });

  test('create returns the secret once; read, list and patch show the spec read fields', async () => {
    const created = await admin('POST', '/v1/manage/keys', {
      name: 'team-a',
      // Named twice: the same list, kept once.
      allowed_models: ['gpt-4o-mini', 'gpt-4o-mini'],
      allowed_regions: 'EU',
      budget_limit: 25,
      budget_period: 'daily',
      rate_limit_rpm: 100,
      metadata: { team: 'a' },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const secret = created.body.key as string;
    assert.match(secret, /^svc-sk-[0-9A-Za-z]{40}$/);
    assert.match(created.body.id as string, /^key_/);
    assert.equal(created.body.name, 'team-a');
    assert.ok(!Number.isNaN(Date.parse(created.body.created as string)), 'created is a timestamp');
    assert.deepEqual(created.body.allowed_regions, ['EU']);
    assert.deepEqual(created.body.allowed_models, ['gpt-4o-mini']);
    const read = await admin('GET', `/v1/manage/keys/${created.body.id as string}`);
    assert.equal(read.status, 200);
    assert.equal(read.body.key, undefined, 'the secret is never shown again');
    for (const field of ['id', 'name', 'budget_limit', 'budget_used', 'budget_remaining', 'budget_period', 'resets_at', 'status']) {
      assert.ok(field in read.body, `read field ${field}`);
    }
    assert.equal(read.body.status, 'active');
    assert.equal(read.body.budget_limit, 25);
    assert.equal(read.body.budget_used, 0);
    assert.equal(read.body.budget_remaining, 25);
    assert.equal(read.body.budget_period, 'daily');
    const patched = await admin('PATCH', `/v1/manage/keys/${created.body.id as string}`, { budget_limit: 50, name: 'team-a2' });
    assert.equal(patched.status, 200);
    assert.equal(patched.body.budget_limit, 50);
    assert.equal(patched.body.name, 'team-a2');
    // The new key works, within its allow-list.
    assert.equal((await call(base, 'POST', '/v1/chat/completions', secret, chatBody())).status, 200);
    expectError(
      await call(base, 'POST', '/v1/chat/completions', secret, { ...chatBody(), region: 'US' }),
      403,
      'provider_redirect_forbidden',
    );
  });

  test('bad fields, unknown ids and forbidden transitions get catalogue errors', async () => {
    expectError(await admin('POST', '/v1/manage/keys', {}), 400, 'missing_fields', 'name');
    expectError(await admin('POST', '/v1/manage/keys', { name: 'x', surprise: 1 }), 400, 'validation_error');
    expectError(await admin('POST', '/v1/manage/keys', { name: 'x', budget_limit: -1 }), 400, 'validation_error', 'budget_limit');
    expectError(await admin('POST', '/v1/manage/keys', { name: 'x', budget_period: 'weekly' }), 400, 'validation_error', 'budget_period');
    expectError(await admin('POST', '/v1/manage/keys', { name: 'x', rate_limit_rpm: 1.5 }), 400, 'validation_error', 'rate_limit_rpm');
    expectError(await admin('POST', '/v1/manage/keys', { name: 'x', allowed_regions: 'e u' }), 400, 'validation_error', 'allowed_regions');
    expectError(
      await admin('POST', '/v1/manage/keys', { name: 'x', allowed_regions: ['APAC'] }),
      400,
      'validation_error',
      'allowed_regions[0]',
    );
    expectError(
      await admin('POST', '/v1/manage/keys', { name: 'x', allowed_models: ['gpt-9'] }),
      400,
      'validation_error',
      'allowed_models[0]',
    );
    expectError(await admin('POST', '/v1/manage/keys', { name: 'x', payer: 'wallet-1' }), 400, 'validation_error', 'payer');
    expectError(await admin('GET', '/v1/manage/keys/key_AAAAAAAAAAAAAAAAAAAA'), 404, 'not_found');
    expectError(await admin('GET', '/v1/manage/keys/not-a-key'), 400, 'validation_error', 'id');
    expectError(await admin('GET', '/v1/manage/keys?cursor=garbage'), 400, 'validation_error', 'cursor');
    expectError(await admin('GET', '/v1/manage/keys?limit=0'), 400, 'validation_error', 'limit');
    // The filter is on the stored status; the derived budget_exhausted is refused saying so, not as an unknown value.
    const exhausted = await admin('GET', '/v1/manage/keys?status=budget_exhausted');
    expectError(exhausted, 400, 'validation_error', 'status');
    assert.match(JSON.stringify(exhausted.body), /stored status.*budget_exhausted is derived/);
    const created = await admin('POST', '/v1/manage/keys', { name: 'to-revoke' });
    expectError(await admin('PATCH', `/v1/manage/keys/${created.body.id as string}`, {}), 400, 'validation_error');
    expectError(
      await admin('PATCH', `/v1/manage/keys/${created.body.id as string}`, { status: 'revoked' }),
      400,
      'validation_error',
      'status',
    );
    assert.equal((await admin('POST', `/v1/manage/keys/${created.body.id as string}/revoke`)).body.status, 'revoked');
    expectError(await admin('PATCH', `/v1/manage/keys/${created.body.id as string}`, { name: 'back' }), 409, 'conflict');
  });

  test('list: filters and cursor pagination without gaps or repeats', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await admin('POST', '/v1/manage/keys', { name: `page-${i}` })).body.id as string);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: Reply = await admin('GET', `/v1/manage/keys?name_prefix=page-&limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      assert.equal(page.status, 200);
      const data = page.body.data as { id: string; name: string }[];
      assert.ok(data.length <= 2, 'page size');
      seen.push(...data.map((k) => k.id));
      cursor = page.body.next_cursor as string | null;
    } while (cursor);
    assert.deepEqual([...seen].sort(), [...ids].sort());
    assert.deepEqual(seen, [...ids].reverse(), 'newest first');
  });

  test('suspend and revoke stop a key at once; suspension can be lifted', async () => {
    const created = await admin('POST', '/v1/manage/keys', { name: 'lifecycle' });
    const secret = created.body.key as string;
    const id = created.body.id as string;
    assert.equal((await call(base, 'POST', '/v1/chat/completions', secret, chatBody())).status, 200);
    await admin('PATCH', `/v1/manage/keys/${id}`, { status: 'suspended' });
    expectError(await call(base, 'POST', '/v1/chat/completions', secret, chatBody()), 403, 'account_status');
    await admin('PATCH', `/v1/manage/keys/${id}`, { status: 'active' });
    assert.equal((await call(base, 'POST', '/v1/chat/completions', secret, chatBody())).status, 200);
    await admin('DELETE', `/v1/manage/keys/${id}`);
    expectError(await call(base, 'POST', '/v1/chat/completions', secret, chatBody()), 401, 'expired_api_key');
  });
});

describe('enforcement and the audit log', () => {
  let h: GatewayHarness;
  let base: string;
  let now = Date.parse('2026-11-21T23:59:00.000Z');
  const admin = (method: string, path: string, body?: unknown) => call(base, method, path, h.adminKey, body);

  beforeAll(async () => {
    h = await startGatewayHarness(
      [{ name: 'sim-eu', region: 'EU', models: [{ id: 'gpt-4o-mini', input_usd_per_mtok: 1_000, output_usd_per_mtok: 1_000 }] }],
      {
        clock: () => now,
      },
    );
    base = h.gateway.url;
  });
  afterAll(async () => {
    await h.close();
  });

  test('200 concurrent requests against a budget covering 10: settled spend never exceeds the limit', async () => {
    // Worst case per request: body bytes × 1000 $/Mtok + 20 output tokens × 1000 $/Mtok.
    const bytes = Buffer.byteLength(JSON.stringify(chatBody('x')));
    const worstCase = ((bytes + 20) * 1_000) / 1e6;
    const limit = Math.round(worstCase * 10 * 1e6) / 1e6 + 1e-6;
    const created = await admin('POST', '/v1/manage/keys', { name: 'budget', budget_limit: limit, budget_period: 'monthly' });
    const secret = created.body.key as string;
    const replies = await Promise.all(Array.from({ length: 200 }, () => call(base, 'POST', '/v1/chat/completions', secret, chatBody('x'))));
    const ok = replies.filter((r) => r.status === 200);
    const refused = replies.filter((r) => r.status !== 200);
    assert.ok(ok.length >= 10, `at least the 10 covered requests pass (${ok.length})`);
    assert.ok(
      refused.every((r) => r.body.error?.code === 'budget_exceeded' && r.status === 402),
      'refusals are budget_exceeded',
    );
    const settled = ok.reduce((sum, r) => sum + Number(r.headers.get('x-svc-cost-usd')), 0);
    assert.ok(settled <= limit + 1e-9, `settled ${settled} within ${limit}`);
    const view = await admin('GET', `/v1/manage/keys/${created.body.id as string}`);
    assert.ok((view.body.budget_used as number) <= limit + 1e-9, `budget_used ${String(view.body.budget_used)} within ${limit}`);
    assert.ok(Math.abs((view.body.budget_used as number) - settled) < 1e-6, 'budget_used is the settled spend');
    assert.equal(view.body.budget_reserved, 0, 'every reservation was settled or released');
  });

  test('daily budget: exhausted key stops, then works again at 00:00 UTC; resets_at is exact', async () => {
    const created = await admin('POST', '/v1/manage/keys', { name: 'daily', budget_limit: 0.5, budget_period: 'daily' });
    const secret = created.body.key as string;
    const id = created.body.id as string;
    let served = 0;
    for (let i = 0; i < 200; i++) {
      const r = await call(base, 'POST', '/v1/chat/completions', secret, chatBody('y'));
      if (r.status !== 200) {
        expectError(r, 402, 'budget_exceeded');
        break;
      }
      served++;
    }
    assert.ok(served > 0 && served < 200, `served ${served}`);
    const view = await admin('GET', `/v1/manage/keys/${id}`);
    assert.equal(view.body.resets_at, '2026-11-22T00:00:00.000Z');
    now = Date.parse('2026-11-22T00:00:00.000Z');
    assert.equal((await call(base, 'POST', '/v1/chat/completions', secret, chatBody('y'))).status, 200, 'a new day, a new budget');
    assert.equal((await admin('GET', `/v1/manage/keys/${id}`)).body.resets_at, '2026-11-23T00:00:00.000Z');
  });

  // Found by an outside probe: the daily counter left behind when the key went monthly was found
  // again when it went back to daily, knowing nothing of what was spent under monthly — the key
  // spent 41 % past its daily budget. A period taken again starts from the audit log.
  test('a budget period left and taken again counts what the key spent meanwhile', async () => {
    const created = await admin('POST', '/v1/manage/keys', { name: 'flip', budget_limit: 0.5, budget_period: 'daily' });
    const secret = created.body.key as string;
    const id = created.body.id as string;
    let spentUsd = 0;
    const spend = async (requests: number) => {
      for (let i = 0; i < requests; i++) {
        const r = await call(base, 'POST', '/v1/chat/completions', secret, chatBody('f'));
        assert.equal(r.status, 200, JSON.stringify(r.body));
        spentUsd += Number(r.headers.get('x-svc-cost-usd'));
      }
    };
    const used = async () => (await admin('GET', `/v1/manage/keys/${id}`)).body.budget_used as number;
    await spend(3);
    assert.equal((await admin('PATCH', `/v1/manage/keys/${id}`, { budget_period: 'monthly', budget_limit: 100 })).status, 200);
    await spend(3);
    assert.equal((await admin('PATCH', `/v1/manage/keys/${id}`, { budget_period: 'daily' })).status, 200);
    await waitFor('the audit log to hold all six requests', async () => Math.abs((await used()) - spentUsd) < 1e-9);
    await spend(1);
    await waitFor('the seventh request counted', async () => Math.abs((await used()) - spentUsd) < 1e-9);
    // A change that keeps the period keeps the counter.
    assert.equal((await admin('PATCH', `/v1/manage/keys/${id}`, { budget_limit: 50, budget_period: 'daily' })).status, 200);
    assert.ok(Math.abs((await used()) - spentUsd) < 1e-9, 'same period, same counter');
  });

  // Found by an outside probe: a limit removed (no counter counts the spend then) and set again
  // found the old counter, which knew nothing of what was spent without a limit.
  test('a budget limit removed and set again counts what the key spent without one', async () => {
    const created = await admin('POST', '/v1/manage/keys', { name: 'unlimited-meanwhile', budget_limit: 0.5, budget_period: 'daily' });
    const secret = created.body.key as string;
    const id = created.body.id as string;
    let spentUsd = 0;
    const spend = async (requests: number) => {
      for (let i = 0; i < requests; i++) {
        const r = await call(base, 'POST', '/v1/chat/completions', secret, chatBody('u'));
        assert.equal(r.status, 200, JSON.stringify(r.body));
        spentUsd += Number(r.headers.get('x-svc-cost-usd'));
      }
    };
    const used = async () => (await admin('GET', `/v1/manage/keys/${id}`)).body.budget_used as number;
    await spend(2);
    assert.equal((await admin('PATCH', `/v1/manage/keys/${id}`, { budget_limit: null })).status, 200);
    await spend(3);
    assert.equal((await admin('PATCH', `/v1/manage/keys/${id}`, { budget_limit: 0.5 })).status, 200);
    await waitFor('the audit log to hold all five requests', async () => Math.abs((await used()) - spentUsd) < 1e-9);
    await spend(1);
    await waitFor('the sixth request counted', async () => Math.abs((await used()) - spentUsd) < 1e-9);
  });

  test('a refusal near the end of a budget explains itself: the worst case reserved and what is left', async () => {
    // 0.000005 USD left: far less than any worst case of max_tokens 20 at this catalogue's prices.
    const created = await admin('POST', '/v1/manage/keys', { name: 'nearly-spent', budget_limit: 0.000005, budget_period: 'daily' });
    const refused = await call(base, 'POST', '/v1/chat/completions', created.body.key as string, chatBody('z'));
    expectError(refused, 402, 'budget_exceeded');
    const message = refused.body.error?.human_message as string;
    assert.match(message, /has 0\.000005 USD left/);
    const reserved = Number(/needs up to (\d+(?:\.\d+)?) USD reserved for its worst case/.exec(message)?.[1]);
    assert.ok(reserved > 0.000005, `the worst case (${reserved}) is what does not fit`);
    assert.match(message, /resets 2026-11-2\dT00:00:00\.000Z/);
    // Worded for every kind of request (audio has no max_tokens).
    assert.match(message, /send a smaller request \(a lower max_tokens\) or raise the budget/);
    const view = await admin('GET', `/v1/manage/keys/${created.body.id as string}`);
    assert.equal(view.body.status, 'active', 'nothing was spent: the key is active, only this request was too large');
    assert.equal(view.body.budget_remaining, 0.000005);
    assert.equal(view.body.budget_reserved, 0, 'a refused request reserves nothing');
  });

  test('resets_at is an ISO time whenever a period exists: rolling before any spend, and a period without a budget', async () => {
    const rolling = await admin('POST', '/v1/manage/keys', { name: 'rolling', budget_limit: 1, budget_period: 'rolling' });
    const today = Math.floor(now / 86_400_000);
    assert.equal(rolling.body.resets_at, new Date((today + 30) * 86_400_000).toISOString());
    assert.equal(
      (await admin('GET', `/v1/manage/keys/${rolling.body.id as string}`)).body.resets_at,
      new Date((today + 30) * 86_400_000).toISOString(),
    );
    const periodOnly = await admin('POST', '/v1/manage/keys', { name: 'period-only', budget_period: 'monthly' });
    assert.equal((await admin('GET', `/v1/manage/keys/${periodOnly.body.id as string}`)).body.resets_at, '2026-12-01T00:00:00.000Z');
    const none = await admin('POST', '/v1/manage/keys', { name: 'no-budget' });
    assert.equal(
      (await admin('GET', `/v1/manage/keys/${none.body.id as string}`)).body.resets_at,
      null,
      'no budget and no period: nothing resets',
    );
  });

  test('rate_limit_rpm 30 across two gateway instances sharing the store: exactly 30 pass', async () => {
    const replica = await h.startReplica();
    const created = await admin('POST', '/v1/manage/keys', { name: 'rpm', rate_limit_rpm: 30 });
    const secret = created.body.key as string;
    const replies = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        call(i % 2 === 0 ? base : replica.url, 'POST', '/v1/chat/completions', secret, chatBody(`r${i}`)),
      ),
    );
    assert.equal(replies.filter((r) => r.status === 200).length, 30);
    const limited = replies.filter((r) => r.status === 429);
    assert.equal(limited.length, 30);
    for (const r of limited) {
      assert.equal(r.body.error?.code, 'rate_limit_exceeded');
      assert.ok(Number(r.headers.get('retry-after')) >= 1, 'Retry-After');
    }
  });

  test('a revoked key stops on every instance once the revocation is announced (no cache TTL waited out)', async () => {
    const replica = await h.startReplica();
    const created = await admin('POST', '/v1/manage/keys', { name: 'revoke-everywhere' });
    const secret = created.body.key as string;
    assert.equal((await call(replica.url, 'POST', '/v1/chat/completions', secret, chatBody())).status, 200); // cached on the replica
    await admin('POST', `/v1/manage/keys/${created.body.id as string}/revoke`);
    // The replica trusts a cached key for 60 s; refusing it well before (the poll's ceiling is
    // 30 s) shows the revocation reached it through the store's announcement.
    await waitFor(
      'the replica to refuse the revoked key',
      async () => (await call(replica.url, 'POST', '/v1/chat/completions', secret, chatBody())).status === 401,
    );
    expectError(await call(replica.url, 'POST', '/v1/chat/completions', secret, chatBody()), 401, 'expired_api_key');
    expectError(await call(base, 'POST', '/v1/chat/completions', secret, chatBody()), 401, 'expired_api_key');
  });

  test('payer wallet: empty gives billing_limit_reached, a credit opens it, requests are debited in the ledger', async () => {
    const created = await admin('POST', '/v1/manage/keys', { name: 'paid', payer: 'org:acme' });
    const secret = created.body.key as string;
    expectError(await call(base, 'POST', '/v1/chat/completions', secret, chatBody()), 403, 'billing_limit_reached');
    expectError(
      await admin('POST', '/v1/manage/wallets/org:acme/credits', { amount_usd: -5, reason: 'x' }),
      400,
      'validation_error',
      'amount_usd',
    );
    // Below the ledger's unit (nano-USD) an amount would be stored rounded — 1e-12 as an entry of 0.
    for (const amount_usd of [1e-12, 1.0000000001]) {
      expectError(
        await admin('POST', '/v1/manage/wallets/org:acme/credits', { amount_usd, reason: 'x' }),
        400,
        'validation_error',
        'amount_usd',
      );
    }
    expectError(await admin('POST', '/v1/manage/keys', { name: 'b', budget_limit: 0.0000000001 }), 400, 'validation_error', 'budget_limit');
    // Nine decimals are kept as sent (the column kept six: 1e-7 became 0, a key that could spend nothing).
    for (const budget_limit of [1e-7, 0.123456789]) {
      const kept = await admin('POST', '/v1/manage/keys', { name: `fine ${budget_limit}`, budget_limit });
      assert.equal(kept.status, 201);
      assert.equal((await admin('GET', `/v1/manage/keys/${String(kept.body.id)}`)).body.budget_limit, budget_limit);
    }
    // Money fields are JSON numbers (docs/keys.md), so a tiny one is written with an exponent — the same number.
    const tiny = await admin('POST', '/v1/manage/keys', { name: 'tiny', budget_limit: 0.000000001 });
    const shown = await fetch(`${base}/v1/manage/keys/${String(tiny.body.id)}`, { headers: { authorization: `Bearer ${h.adminKey}` } });
    const text = await shown.text();
    assert.match(text, /"budget_limit":1e-9[,}]/, 'a JSON number, in the form JSON gives it');
    assert.equal((JSON.parse(text) as { budget_limit: number }).budget_limit, 0.000000001);
    assert.deepEqual((await admin('GET', '/v1/manage/wallets/org:acme')).body.entries, [], 'no empty ledger entry');
    const credit = await admin('POST', '/v1/manage/wallets/org:acme/credits', { amount_usd: 5, reason: 'welcome credit' });
    assert.equal(credit.status, 201);
    assert.equal(credit.body.balance_usd, 5);
    const ok = await call(base, 'POST', '/v1/chat/completions', secret, chatBody());
    assert.equal(ok.status, 200);
    const cost = Number(ok.headers.get('x-svc-cost-usd'));
    assert.ok(cost > 0, 'the request cost something');
    const wallet = await eventually(
      () => admin('GET', '/v1/manage/wallets/org:acme'),
      (w) => (w.body.entries as unknown[]).length === 2,
      'the debit in the ledger',
    );
    const balance = wallet.body.balance_usd as number;
    assert.ok(
      Math.abs(balance - (5 - cost)) < 1e-6,
      `balance ${balance} after a ${cost} USD request (entries ${JSON.stringify(wallet.body.entries)})`,
    );
  });

  test('the audit log read through the Management API matches the requests: count, tokens and cost', async () => {
    const created = await admin('POST', '/v1/manage/keys', { name: 'audited' });
    const secret = created.body.key as string;
    const id = created.body.id as string;
    const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: secret, maxRetries: 0 });
    let tokensIn = 0;
    let tokensOut = 0;
    let cost = 0;
    for (let i = 0; i < 7; i++) {
      const { data, response } = await client.chat.completions
        .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: `audit ${i}` }], max_tokens: 20 })
        .withResponse();
      tokensIn += data.usage!.prompt_tokens;
      tokensOut += data.usage!.completion_tokens;
      cost += Number(response.headers.get('x-svc-cost-usd'));
    }
    await assert.rejects(client.chat.completions.create({ model: 'gpt-9', messages: [{ role: 'user', content: 'x' }] }));
    const audit = await eventually(
      () => admin('GET', `/v1/manage/keys/${id}/audit?limit=100`),
      (r) => (r.body.data as unknown[] | undefined)?.length === 7,
      'seven audit rows',
    );
    const rows = audit.body.data as {
      input_tokens: number;
      output_tokens: number;
      cost_usd: number;
      supplier: string;
      region: string;
      key_id: string;
      status: number;
      request_id: string;
      latency_ms: number;
    }[];
    assert.equal(
      rows.reduce((s, r) => s + r.input_tokens, 0),
      tokensIn,
    );
    assert.equal(
      rows.reduce((s, r) => s + r.output_tokens, 0),
      tokensOut,
    );
    assert.equal(Math.round(rows.reduce((s, r) => s + r.cost_usd, 0) * 100), Math.round(cost * 100));
    assert.ok(Math.abs(rows.reduce((s, r) => s + r.cost_usd, 0) - cost) < 1e-6);
    for (const r of rows) {
      assert.equal(r.key_id, id);
      assert.equal(r.supplier, 'sim-eu');
      assert.equal(r.region, 'EU');
      assert.equal(r.status, 200);
      assert.match(r.request_id, /^req_/);
    }
    const page = await admin('GET', `/v1/manage/keys/${id}/audit?limit=3`);
    assert.equal((page.body.data as unknown[]).length, 3);
    assert.ok(page.body.next_cursor, 'a next cursor');
    expectError(await admin('GET', `/v1/manage/keys/${id}/audit?from=yesterday`), 400, 'validation_error', 'from');
  });
});
