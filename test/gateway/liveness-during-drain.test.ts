// Rollouts with long streams (issue 21): while the gateway drains, its readiness (/health on the
// API port) fails so the pod leaves the Service, but its liveness (/health on the metrics port,
// the chart's livenessProbe) stays green, so Kubernetes never kills a pod that is finishing
// requests. A supplier the test holds keeps one request in flight through the drain.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
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

  it('readiness fails, liveness stays 200 until the last request is done', async () => {
    // A supplier that answers only when the test says so.
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
    const supplierUrl = `http://127.0.0.1:${(supplier.address() as AddressInfo).port}/v1`;

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
});
