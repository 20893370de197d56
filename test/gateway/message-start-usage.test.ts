// An Anthropic client streaming from an OpenAI-protocol supplier: Anthropic's message_start
// reports the input tokens at once, an OpenAI supplier only at the end. The gateway fills
// message_start with its own count of the request — the number count_tokens answers for it —
// while the supplier's figures (what is charged) follow in message_delta.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import Anthropic from '@anthropic-ai/sdk';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.js';

describe('message_start input tokens from a supplier of another protocol', () => {
  let h: GatewayHarness;
  let anthropic: Anthropic;

  beforeAll(async () => {
    h = await startGatewayHarness([{ name: 'sim-openai', region: 'EU', models: [{ id: 'gpt-4o-mini' }] }]);
    anthropic = new Anthropic({ baseURL: h.gateway.url, apiKey: await h.createKey(), maxRetries: 0 });
  });
  afterAll(async () => {
    await h?.close();
  });

  test('are the gateway’s count of the request, and message_delta carries the supplier’s', async () => {
    const params = {
      model: 'gpt-4o-mini',
      max_tokens: 50,
      system: 'You answer in one sentence.',
      messages: [{ role: 'user' as const, content: 'How far is the Moon from the Earth, roughly, in kilometres?' }],
    };
    // count_tokens uses the same counter (and starts its thread, as the gateway's start does).
    const { input_tokens: counted } = await anthropic.messages.countTokens(params);
    expect(counted).toBeGreaterThan(10);

    let startInput: number | undefined;
    let delta: { usage: { input_tokens?: number | null }; svc?: { input_tokens: number } } | undefined;
    const stream = anthropic.messages.stream(params);
    stream.on('streamEvent', (event) => {
      if (event.type === 'message_start') startInput = event.message.usage.input_tokens;
      if (event.type === 'message_delta') delta = event as unknown as typeof delta;
    });
    const final = await stream.finalMessage();
    expect(startInput).toBe(counted);
    // The supplier's own count (what is charged: the svc totals) comes in message_delta, and is what the SDK keeps.
    expect(delta?.svc?.input_tokens).toBeGreaterThan(0);
    expect(delta?.usage.input_tokens).toBe(delta?.svc?.input_tokens);
    expect(final.usage.input_tokens).toBe(delta?.svc?.input_tokens);
  });
});
