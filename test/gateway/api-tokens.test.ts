// `svc_` API tokens: issued by the Management API (secret once), scoped to a team or a project,
// accepted by the gateway through both official SDKs, charged to a project's wallet when scoped
// to one, listed without secrets, and refused everywhere once revoked.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.js';
import { waitFor } from '../support/wait-for.js';

let h: GatewayHarness;
beforeAll(async () => {
  h = await startGatewayHarness();
});
afterAll(async () => {
  await h?.close();
});

async function admin(method: string, path: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${h.gateway.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${h.adminKey}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const openai = (secret: string) =>
  new OpenAI({ baseURL: `${h.gateway.url}/v1`, apiKey: secret, maxRetries: 0 }).chat.completions.create({
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: 'hello' }],
    max_tokens: 5,
  });
const anthropic = (secret: string) =>
  new Anthropic({ baseURL: h.gateway.url, apiKey: secret, maxRetries: 0 }).messages.create({
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: 'hello' }],
    max_tokens: 5,
  });
const statusOf = (p: Promise<unknown>) =>
  p.then(
    () => 200,
    (e: unknown) => (e instanceof OpenAI.APIError || e instanceof Anthropic.APIError ? (e.status ?? 0) : -1),
  );

describe('API tokens', () => {
  it('issues a team token once, serves both SDKs with it, lists it without the secret, and revokes it', async () => {
    const created = await admin('POST', '/v1/manage/tokens', { name: 'data team', team: 'data-science' });
    expect(created.status).toBe(201);
    const secret = created.body.token as string;
    expect(secret).toMatch(/^svc_[0-9A-Za-z]+$/);
    expect(created.body).toMatchObject({ object: 'api_token', name: 'data team', team: 'data-science', project: null, status: 'active' });

    expect((await openai(secret)).choices[0]?.message.content).toBeTruthy();
    expect((await anthropic(secret)).content.length).toBeGreaterThan(0);

    const list = await admin('GET', '/v1/manage/tokens');
    const listed = (list.body.data as Record<string, unknown>[]).find((t) => t.id === created.body.id);
    expect(listed).toMatchObject({ name: 'data team', team: 'data-science' });
    expect(JSON.stringify(list.body)).not.toContain(secret);
    // Tokens are not keys: the keys listing has managed keys only when asked by kind… and the
    // token routes do not answer for a managed key.
    const key = await h.createKeyWithId();
    expect((await admin('GET', `/v1/manage/tokens/${key.id}`)).status).toBe(404);
    // …nor do the key routes for a token: its one-team-or-project rule is not bypassed through them.
    const tokenPath = `/v1/manage/keys/${created.body.id as string}`;
    expect((await admin('GET', tokenPath)).status).toBe(404);
    expect((await admin('PATCH', tokenPath, { metadata: { team: 'gamma', project: 'evil' } })).status).toBe(404);
    expect((await admin('PATCH', tokenPath, { budget_limit: 1 })).status).toBe(404);
    expect((await admin('GET', `${tokenPath}/audit`)).status).toBe(404);
    expect((await admin('GET', `/v1/manage/tokens/${created.body.id as string}`)).body).toMatchObject({
      team: 'data-science',
      project: null,
    });

    const revoked = await admin('DELETE', `/v1/manage/tokens/${created.body.id as string}`);
    expect(revoked.body.status).toBe('revoked');
    await waitFor('the revoked token to be refused', async () => (await statusOf(openai(secret))) === 401, 2_000);
    expect(await statusOf(anthropic(secret))).toBe(401);
    // Idempotent.
    expect((await admin('POST', `/v1/manage/tokens/${created.body.id as string}/revoke`)).body.status).toBe('revoked');
  });

  it('charges a project token to the project: refused with billing_limit_reached until the project wallet is funded', async () => {
    const created = await admin('POST', '/v1/manage/tokens', { name: 'checkout', project: 'checkout' });
    expect(created.body.payer).toBe('project:checkout');
    const secret = created.body.token as string;
    expect(await statusOf(openai(secret))).toBe(403);
    expect((await admin('POST', '/v1/manage/wallets/project:checkout/credits', { amount_usd: 5, reason: 'test funding' })).status).toBe(
      201,
    );
    expect(await statusOf(openai(secret))).toBe(200);
    await waitFor(
      'the debit in the project wallet',
      async () => (await admin('GET', '/v1/manage/wallets/project:checkout')).body.balance_usd !== 5,
    );
    expect((await admin('GET', '/v1/manage/wallets/project:checkout')).body.balance_usd as number).toBeLessThan(5);
  });

  it('refuses bad requests with 400 validation_error naming the field, and non-admin callers', async () => {
    expect((await admin('POST', '/v1/manage/tokens', { name: 'x', team: 'a', project: 'b' })).body).toMatchObject({
      error: { param: 'project' },
    });
    expect((await admin('POST', '/v1/manage/tokens', { name: 'x', team: 'Not A Slug' })).body).toMatchObject({ error: { param: 'team' } });
    expect((await admin('POST', '/v1/manage/tokens', { team: 'a' })).body).toMatchObject({ error: { param: 'name' } });
    // A project's token is paid by the project: no other payer, and not none (it ran free of every wallet).
    for (const payer of [null, 'org:acme', 'project:other']) {
      const refused = await admin('POST', '/v1/manage/tokens', { name: 'x', project: 'checkout', payer });
      expect([refused.status, refused.body]).toMatchObject([400, { error: { code: 'validation_error', param: 'payer' } }]);
    }
    expect((await admin('POST', '/v1/manage/tokens', { name: 'x', project: 'checkout', payer: 'project:checkout' })).status).toBe(201);
    expect((await admin('GET', '/v1/manage/tokens/key_nope')).status).toBe(400);
    const token = (await admin('POST', '/v1/manage/tokens', { name: 'y' })).body.token as string;
    const asToken = await fetch(`${h.gateway.url}/v1/manage/tokens`, { headers: { authorization: `Bearer ${token}` } });
    expect(asToken.status).toBe(403);
  });
});
