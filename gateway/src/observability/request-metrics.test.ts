import { test } from 'vitest';
import assert from 'node:assert/strict';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { buildCatalogue } from '../../../core/config/index.js';
import { createGatewayMetrics, createMetricsRegistry } from '../../../core/telemetry/index.js';
import type { RoutingRecord } from '../pipeline/attempts.js';
import { recordRequestMetrics } from './request-metrics.js';

const catalogue = buildCatalogue(
  {
    suppliers: [
      {
        name: 'sim-eu',
        protocol: 'openai',
        base_url: 'http://127.0.0.1:1/v1',
        region: 'EU',
        models: [{ id: 'gpt-4o-mini', input_usd_per_mtok: 1, output_usd_per_mtok: 2 }],
      },
    ],
  },
  {},
);

function routing(partial: Partial<RoutingRecord>): RoutingRecord {
  return {
    interfaceName: 'chat.completions',
    model: 'gpt-4o-mini',
    attempts: [],
    session: undefined,
    usage: undefined,
    costUsd: undefined,
    upstreamMs: 0,
    firstByteMs: undefined,
    inFlightSupplier: undefined,
    ...partial,
  };
}

/** A finished request as the onResponse hook sees it. */
function finished(
  record: RoutingRecord | undefined,
  status: number,
  elapsedMs: number,
  extra: { route?: string | undefined; errorCode?: string } = {},
) {
  const route = 'route' in extra ? extra.route : '/v1/chat/completions';
  const request = { routing: record, routeOptions: { url: route }, errorCode: extra.errorCode } as unknown as FastifyRequest;
  const reply = { statusCode: status, elapsedTime: elapsedMs } as unknown as FastifyReply;
  return [request, reply] as const;
}

const attempt = {
  supplier: 'sim-eu',
  region: 'EU',
  startedAt: 0,
  latencyMs: 40,
  outcome: 'ok' as const,
  status: 200,
  code: undefined,
  selectionMs: undefined,
};

test('a stream with its first byte time observes time to first byte, overhead from the unrounded upstream time', async () => {
  const registry = createMetricsRegistry({ processMetrics: false });
  const metrics = createGatewayMetrics(registry);
  recordRequestMetrics(metrics, catalogue, ...finished(routing({ attempts: [attempt], upstreamMs: 40.25, firstByteMs: 12.5 }), 200, 41));
  const text = await registry.metrics();
  assert.match(
    text,
    /^svc_gateway_time_to_first_byte_seconds_sum\{interface="chat.completions",model="gpt-4o-mini",supplier="sim-eu"\} 0.0125$/m,
    'first byte at 12.5 ms, labelled like the request',
  );
  const overhead = Number(/^svc_gateway_overhead_seconds_sum\{interface="chat.completions"\} (\S+)$/m.exec(text)?.[1]);
  assert.ok(Math.abs(overhead - 0.00075) < 1e-12, `overhead 0.75 ms, got ${overhead}`);
});

test('labels stay bounded: unknown models, foreign codes and unrouted paths', async () => {
  const registry = createMetricsRegistry({ processMetrics: false });
  const metrics = createGatewayMetrics(registry);
  const failed = { ...attempt, outcome: 'failed' as const, status: 502, code: 'some_provider_code_9f2' };
  recordRequestMetrics(
    metrics,
    catalogue,
    ...finished(routing({ model: 'model-from-the-client-xyz' }), 404, 1, { errorCode: 'model_not_found' }),
  );
  recordRequestMetrics(metrics, catalogue, ...finished(routing({ attempts: [failed] }), 502, 5, { errorCode: 'some_provider_code_9f2' }));
  recordRequestMetrics(metrics, catalogue, ...finished(undefined, 200, 1, { route: '/v1/manage/keys/:id' }));
  recordRequestMetrics(metrics, catalogue, ...finished(undefined, 404, 1, { route: undefined, errorCode: 'not_found' }));
  const text = await registry.metrics();
  assert.ok(!text.includes('model-from-the-client-xyz'), 'a model outside the catalogue is not a label value');
  assert.ok(!text.includes('some_provider_code_9f2'), 'a code outside the catalogue is not a label value');
  assert.match(
    text,
    /svc_gateway_requests_total\{interface="chat.completions",model="unknown",supplier="none",region="none",status="404",code="model_not_found"\} 1/,
    'unknown model',
  );
  assert.match(
    text,
    /svc_gateway_requests_total\{interface="chat.completions",model="gpt-4o-mini",supplier="sim-eu",region="EU",status="502",code="other"\} 1/,
    'foreign code',
  );
  assert.match(
    text,
    /svc_gateway_requests_total\{interface="manage",model="none",supplier="none",region="none",status="200",code="none"\} 1/,
    'management route',
  );
  assert.match(text, /svc_gateway_requests_total\{interface="unmatched",[^}]*status="404",code="not_found"\} 1/, 'no route');
  assert.doesNotMatch(text, /svc_gateway_failovers_total\{/, 'a single failed attempt is no failover');
  assert.doesNotMatch(text, /svc_gateway_rejections_total\{/, 'no enforcement refusal');
});
