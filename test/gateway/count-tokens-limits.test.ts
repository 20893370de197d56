// count_tokens is free (no budget, wallet or audit row: suppliers do not charge for counting)
// but not unlimited: the key's rate limit applies to it like to any request of the key.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Anthropic from '@anthropic-ai/sdk';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.js';

let h: GatewayHarness;
beforeAll(async () => {
  h = await startGatewayHarness();
});
afterAll(async () => {
  await h?.close();
});

const count = (secret: string) =>
  new Anthropic({ baseURL: h.gateway.url, apiKey: secret, maxRetries: 0 }).messages.countTokens({
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: 'how many tokens is this?' }],
  });

describe('count_tokens', () => {
  it('is refused with rate_limit_exceeded once the key has used its requests per minute', async () => {
    const { id, secret } = await h.createKeyWithId({ rateLimitRpm: 2 });
    expect((await count(secret)).input_tokens).toBeGreaterThan(0);
    expect((await count(secret)).input_tokens).toBeGreaterThan(0);
    const refused = await count(secret).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(Anthropic.APIError);
    expect((refused as InstanceType<typeof Anthropic.APIError>).status).toBe(429);
    expect(JSON.stringify((refused as InstanceType<typeof Anthropic.APIError>).error)).toContain('rate_limit_exceeded');
    expect(await h.auditOf(id)).toEqual([]);
  });

  it('costs nothing against a budget: a key with a tiny budget still counts', async () => {
    const secret = await h.createKey({ budgetLimitUsd: 0.000001, budgetPeriod: 'daily' });
    for (let i = 0; i < 3; i++) expect((await count(secret)).input_tokens).toBeGreaterThan(0);
  });
});
