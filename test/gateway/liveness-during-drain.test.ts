// Rollouts with long streams (issue 21): while the gateway drains, its readiness (/health on the
// API port) fails so the pod leaves the Service, but its liveness (/health on the metrics port,
// the chart's livenessProbe) stays green, so Kubernetes never kills a pod that is finishing
// requests. A supplier the test holds keeps one request in flight through the drain.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent, request as undiciRequest } from 'undici';
import { afterEach, describe, it } from 'vitest';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.js';
import { waitFor } from '../support/wait-for.js';

async function status(url: string): Promise<number | 'refused'> {
  try {
    const response = await fetch(url);
    await response.arrayBuffer();
    return response.status;
  } catch {
    return 'refused';
  }
}

describe('gateway liveness while draining', () => {
  const cleanups: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  /** A supplier that answers only when the test says so: each request's response waits in `held`. */
  async function heldSupplier(): Promise<{ held: ServerResponse[]; supplierUrl: string }> {
    const held: ServerResponse[] = [];
    const supplier = createServer((request: IncomingMessage, response: ServerResponse) => {
      request.resume();
      held.push(response);
    });
    await new Promise<void>((resolve) => supplier.listen(0, '127.0.0.1', resolve));
    cleanups.push(
      () =>
        new Promise<void>((resolve) => {
          supplier.closeAllConnections();
          supplier.close(() => resolve());
        }),
    );
    return { held, supplierUrl: `http://127.0.0.1:${(supplier.address() as AddressInfo).port}/v1` };
  }

  it('readiness fails, liveness stays 200 until the last request is done', async () => {
    const { held, supplierUrl } = await heldSupplier();

    const harness: GatewayHarness = await startGatewayHarness([{ name: 'held', region: 'EU', baseUrl: supplierUrl, timeout_ms: 60_000 }], {
      metrics: true,
    });
    cleanups.push(() => harness.close());
    const { gateway } = harness;
    assert.ok(gateway.metricsUrl, 'metrics served');
    const liveness = new URL('/health', gateway.metricsUrl).href;
    const readiness = `${gateway.url}/health`;
    assert.equal(await status(liveness), 200, 'live before the drain');
    assert.equal(await status(readiness), 200, 'ready before the drain');

    const apiKey = await harness.createKey();
    const inFlight = fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
    }).then(
      (r) => r.status,
      () => 'failed' as const,
    );
    await waitFor('the request to reach the supplier', () => held.length === 1);

    let stopped = false;
    const stopping = gateway.stop().then(() => {
      stopped = true;
    });
    await waitFor('readiness to fail', async () => (await status(readiness)) !== 200);
    assert.equal(await status(liveness), 200, 'live while draining');
    assert.equal(stopped, false, 'still draining: the request is in flight');

    held[0]!.writeHead(500, { 'content-type': 'application/json' }).end('{"error":{"message":"done"}}');
    assert.notEqual(await inFlight, 'failed', 'the in-flight request was answered, not cut');
    await stopping;
  });

  it('an answer that ends during the drain closes its connection, so the client does not reuse it (outside probe)', async () => {
    const { held, supplierUrl } = await heldSupplier();
    const harness = await startGatewayHarness([{ name: 'held', region: 'EU', baseUrl: supplierUrl, timeout_ms: 60_000 }]);
    cleanups.push(() => harness.close());
    const apiKey = await harness.createKey();
    // A keep-alive client, as SDKs are: before the drain, answers keep the connection open.
    const client = new Agent({ keepAliveTimeout: 60_000 });
    cleanups.push(() => client.close());
    const call = () =>
      undiciRequest(`${harness.gateway.url}/v1/chat/completions`, {
        method: 'POST',
        dispatcher: client,
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
      });
    const reply =
      '{"id":"c","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}';
    const before = call();
    await waitFor('the first request at the supplier', () => held.length === 1);
    held[0]!.writeHead(200, { 'content-type': 'application/json' }).end(reply);
    const first = await before;
    await first.body.text();
    assert.equal(first.headers.connection, 'keep-alive', 'outside a drain the connection is kept');

    const during = call();
    await waitFor('the second request at the supplier', () => held.length === 2);
    const stopping = harness.gateway.stop();
    await waitFor('the drain to start', async () => (await status(`${harness.gateway.url}/health`)) !== 200);
    held[1]!.writeHead(200, { 'content-type': 'application/json' }).end(reply);
    const answered = await during;
    assert.equal(answered.statusCode, 200);
    await answered.body.text();
    assert.equal(answered.headers.connection, 'close', 'the answer tells the client to close the connection');
    await stopping;
  });
});
