import type { FastifyRequest } from 'fastify';
import { expect, test } from 'vitest';
import { chargedUsage } from './charged-usage.js';

const request = { log: { warn: () => undefined }, id: 'r1' } as unknown as FastifyRequest;

test('a usage completed by the gateway keeps the cache reads and writes the supplier reported', async () => {
  // An Anthropic stream cut before message_delta: input (with its cache) known, output not.
  const { usage, counted } = await chargedUsage(
    { inputTokens: 1_200, outputTokens: 0, cachedInputTokens: 1_000, cacheWriteInputTokens: 150 },
    { input: () => [], inputBound: 10_000, output: () => ['an answer that was cut'], outputBound: 100, outputStop: 100 },
    request,
  );
  expect(counted).toEqual(['output']);
  expect(usage).toMatchObject({ inputTokens: 1_200, cachedInputTokens: 1_000, cacheWriteInputTokens: 150 });
  expect(usage.outputTokens).toBeGreaterThan(0);
});
