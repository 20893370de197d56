// The portal's traces: one SERVER span per request, continuing the caller's `traceparent`, named
// by the route pattern and never by the raw path (an invite link's token must not reach a span),
// with the catalogue code as error.type, and the trace id in the request's log line.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { startTracing, type Tracing } from '../../core/telemetry/index.js';
import { startPortalHarness, type PortalHarness } from '../support/portal-harness.js';

const exporter = new InMemorySpanExporter();
const tracing: Tracing = startTracing({ serviceName: 'svc-portal', spanProcessors: [new SimpleSpanProcessor(exporter)] });

async function spansOf(traceId: string): Promise<ReadableSpan[]> {
  await tracing.forceFlush();
  return exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
}

function logLine(h: PortalHarness, requestId: string): Record<string, unknown> {
  const line = h
    .logText()
    .split('\n')
    .filter((l) => l.includes(requestId))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .find((l) => l.msg === 'request');
  if (!line) throw new Error(`no request log line for ${requestId}`);
  return line;
}

let h: PortalHarness;
beforeAll(async () => {
  h = await startPortalHarness({ tracing });
});
afterAll(async () => {
  await h?.close();
  await tracing.shutdown();
});

describe('portal traces', () => {
  it('continues the caller trace with a server span named by the route, and logs the trace id', async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const parentSpanId = '00f067aa0ba902b7';
    const response = await fetch(`${h.url}/pricing`, {
      headers: { traceparent: `00-${traceId}-${parentSpanId}-01`, 'x-request-id': 'trace-pricing-1' },
    });
    expect(response.status).toBe(200);
    const spans = await spansOf(traceId);
    expect(spans).toHaveLength(1);
    const span = spans[0]!;
    expect(span.kind).toBe(SpanKind.SERVER);
    expect(span.name).toBe('GET /pricing');
    expect(span.parentSpanContext?.spanId).toBe(parentSpanId);
    expect(span.attributes['http.route']).toBe('/pricing');
    expect(span.attributes['http.response.status_code']).toBe(200);
    expect(span.attributes['svc.request_id']).toBe('trace-pricing-1');
    expect(logLine(h, 'trace-pricing-1').trace_id).toBe(traceId);
  });

  it('names a path that holds a token by its pattern, and never records the token', async () => {
    const traceId = '5bf92f3577b34da6a3ce929d0e0e4737';
    const token = 'invite-token-that-must-stay-secret-9f8e7d';
    const response = await fetch(`${h.url}/invite/${token}`, { headers: { traceparent: `00-${traceId}-00f067aa0ba902b8-01` } });
    expect(response.status).toBeLessThan(500);
    const spans = await spansOf(traceId);
    expect(spans).toHaveLength(1);
    const span = spans[0]!;
    expect(span.name).toBe('GET /invite/:token');
    expect(JSON.stringify({ name: span.name, attributes: span.attributes })).not.toContain(token);
  });

  it('marks a refused request with its catalogue code, and only a 5xx as an error status', async () => {
    const traceId = '6bf92f3577b34da6a3ce929d0e0e4738';
    const response = await fetch(`${h.url}/api/legal/status`, {
      headers: { traceparent: `00-${traceId}-00f067aa0ba902b9-01`, accept: 'application/json' },
    });
    expect(response.status).toBe(401);
    const span = (await spansOf(traceId))[0]!;
    expect(span.attributes['http.response.status_code']).toBe(401);
    expect(span.attributes['error.type']).toBe(((await response.json()) as { code: string }).code);
    expect(span.status.code).not.toBe(SpanStatusCode.ERROR);
  });
});
