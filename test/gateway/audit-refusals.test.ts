// Requests the key's own policy refuses (rate 429, budget 402, model 403) appear in the key's
// audit log with their status and code, no supplier and no cost, so an owner can see why calls
// failed; a request refused for bad input is not the key's doing and is not recorded.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.js';
import { waitFor } from '../support/wait-for.js';

let h: GatewayHarness;
beforeAll(async () => {
  h = await startGatewayHarness([{ name: 'sim-eu', region: 'EU', models: [{ id: 'gpt-4o-mini' }, { id: 'gpt-4o' }] }]);
});
afterAll(async () => {
  await h?.close();
});

const chat = (secret: string, body: Record<string, unknown> = {}) =>
  fetch(`${h.gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 20, ...body }),
  });

describe('refusals in the audit log', () => {
  it('records rate, budget and model refusals with status and code, and not bad input', async () => {
    const { id, secret } = await h.createKeyWithId({ rateLimitRpm: 2, allowedModels: ['gpt-4o-mini'] });
    expect((await chat(secret)).status).toBe(200);
    expect((await chat(secret, { model: 'gpt-4o' })).status).toBe(403);
    expect((await chat(secret, { messages: 'not a list' })).status).toBe(400);
    expect((await chat(secret)).status).toBe(200);
    const limited = await chat(secret);
    expect(limited.status).toBe(429);

    await waitFor('four audit rows', async () => (await h.auditOf(id)).length >= 4);
    const rows = await h.auditOf(id);
    expect(rows).toHaveLength(4);
    const refused = rows.filter((r) => r.status !== 200);
    expect(refused.map((r) => [r.status, r.code]).sort()).toEqual([
      [403, 'model_not_allowed'],
      [429, 'rate_limit_exceeded'],
    ]);
    for (const r of refused) {
      expect(r.supplier).toBeNull();
      expect(r.attempts).toEqual([]);
    }
    expect(rows.find((r) => r.status === 429)!.request_id).toBe(limited.headers.get('x-request-id'));
  });

  it('does not record a call for a model the gateway does not serve (404) nor a model id longer than any (400): their names are unbounded', async () => {
    const { id, secret } = await h.createKeyWithId();
    const unknown = await chat(secret, { model: 'gpt-4o-mni' });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ error: { code: 'model_not_found', param: 'model' } });
    // A model id longer than any catalogue id (200) names nothing: bad input.
    const long = await chat(secret, { model: 'm'.repeat(201) });
    expect(long.status).toBe(400);
    expect(await long.json()).toMatchObject({ error: { param: 'model' } });
    expect((await chat(secret)).status).toBe(200);
    await waitFor('the served call in the audit log', async () => (await h.auditOf(id)).length >= 1);
    expect((await h.auditOf(id)).map((r) => [r.status, r.model])).toEqual([[200, 'gpt-4o-mini']]);
  });

  it('records a budget refusal as 402 budget_exceeded with no cost', async () => {
    const { id, secret } = await h.createKeyWithId({ budgetLimitUsd: 0.000001, budgetPeriod: 'daily' });
    expect((await chat(secret)).status).toBe(402);
    await waitFor('the refusal in the audit log', async () => (await h.auditOf(id)).length === 1);
    expect((await h.auditOf(id))[0]).toMatchObject({ status: 402, code: 'budget_exceeded', supplier: null });
  });
});
