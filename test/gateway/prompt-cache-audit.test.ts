// An Anthropic-protocol supplier reports the prompt-cache tokens it read and wrote: each is priced
// at its own rate, and the audit record keeps both counts, so a row whose cost is above its input
// and output price says why (the Management API's audit list and the portal's request log read it).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.js';
import { waitFor } from '../support/wait-for.js';

let server: Server;
let h: GatewayHarness;
const usage = { input_tokens: 10, cache_creation_input_tokens: 600, cache_read_input_tokens: 300, output_tokens: 20 };

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          id: 'msg_cache',
          type: 'message',
          role: 'assistant',
          model: 'cached-claude',
          content: [{ type: 'text', text: 'From the cache' }],
          stop_reason: 'end_turn',
          stop_sequence: null,
          usage,
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  h = await startGatewayHarness([
    {
      name: 'caching',
      region: 'EU',
      protocol: 'anthropic',
      baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
      models: [
        {
          id: 'cached-claude',
          input_usd_per_mtok: 3,
          cached_input_usd_per_mtok: 0.3,
          cache_write_input_usd_per_mtok: 3.75,
          output_usd_per_mtok: 15,
        },
      ],
    },
  ]);
});
afterAll(async () => {
  await h?.close();
  await new Promise((resolve) => server?.close(resolve));
});

test('cache reads and writes are charged at their rates and kept in the audit record', async () => {
  const { id, secret } = await h.createKeyWithId();
  const anthropic = new Anthropic({ baseURL: h.gateway.url, apiKey: secret, maxRetries: 0 });
  // A long system prompt, as a cached one is: the usage the supplier reports must fit the request.
  const message = await anthropic.messages.create({
    model: 'cached-claude',
    max_tokens: 50,
    system: [{ type: 'text', text: 'You answer briefly. '.repeat(200), cache_control: { type: 'ephemeral' } }],
    messages: [{ role: 'user', content: 'hi' }],
  });
  expect(message.usage).toMatchObject(usage);

  // 10 × $3 + 300 × $0.30 + 600 × $3.75 + 20 × $15, per million tokens.
  const cost = (10 * 3 + 300 * 0.3 + 600 * 3.75 + 20 * 15) / 1e6;
  let records: Awaited<ReturnType<GatewayHarness['auditOf']>> = [];
  await waitFor('the audit record', async () => (records = await h.auditOf(id)).length === 1);
  expect(records[0]).toMatchObject({
    input_tokens: 910,
    cached_input_tokens: 300,
    cache_write_input_tokens: 600,
    output_tokens: 20,
  });
  expect(records[0]!.cost_usd).toBeCloseTo(cost, 9);
});
