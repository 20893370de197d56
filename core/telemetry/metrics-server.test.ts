import { onTestFinished, test } from 'vitest';
import assert from 'node:assert/strict';
import { Counter } from 'prom-client';
import { startMetricsServer } from './metrics-server.js';
import { createMetricsRegistry } from './registry.js';

test('metrics server: GET /metrics answers the registry in the Prometheus text format, other paths 404', async () => {
  const registry = createMetricsRegistry({ processMetrics: false });
  new Counter({ name: 'svc_test_things_total', help: 'things', registers: [registry] }).inc(3);
  const server = await startMetricsServer(registry, { host: '127.0.0.1', port: 0 });
  onTestFinished(() => server.close());
  const response = await fetch(server.url);
  assert.equal(response.status, 200, 'metrics are served');
  assert.match(response.headers.get('content-type') ?? '', /text\/plain; version=0\.0\.4/, 'Prometheus text format');
  assert.match(await response.text(), /^svc_test_things_total 3$/m, 'the counter value is exposed');
  const other = await fetch(server.url.replace('/metrics', '/v1/models'));
  assert.equal(other.status, 404, 'nothing else is served on the metrics port');
  await other.text();
});
