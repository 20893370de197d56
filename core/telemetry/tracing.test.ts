import { test } from 'vitest';
import assert from 'node:assert/strict';
import { trace } from '@opentelemetry/api';
import { decideTracing, injectTraceContext, traceContextFromHeaders } from './tracing.js';

test('tracing: off unless an exporter is named or an OTLP endpoint is given', () => {
  const cases: [Record<string, string>, boolean][] = [
    [{}, false],
    [{ OTEL_TRACES_EXPORTER: 'none' }, false],
    [{ OTEL_TRACES_EXPORTER: 'otlp' }, true],
    [{ OTEL_TRACES_EXPORTER: ' Console ' }, true],
    [{ OTEL_TRACES_EXPORTER: 'none,otlp' }, true],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, true],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }, true],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: '  ' }, false],
    [{ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, false],
    [{ OTEL_SDK_DISABLED: 'true', OTEL_TRACES_EXPORTER: 'otlp' }, false],
    [{ OTEL_SDK_DISABLED: 'false', OTEL_TRACES_EXPORTER: 'otlp' }, true],
  ];
  for (const [env, enabled] of cases) {
    const decision = decideTracing(env);
    assert.equal(decision.enabled, enabled, `${JSON.stringify(env)} → ${decision.reason}`);
    assert.ok(decision.reason.length > 0, 'the decision says why');
  }
});

test('tracing: an exporter the SDK cannot build stops start-up naming the variable', () => {
  assert.throws(() => decideTracing({ OTEL_TRACES_EXPORTER: 'jaeger' }), /OTEL_TRACES_EXPORTER: unsupported exporter jaeger/);
});

test('tracing: traceparent round-trips through headers', () => {
  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
  const incoming = traceContextFromHeaders({ traceparent: `00-${traceId}-00f067aa0ba902b7-01` });
  const parent = trace.getSpanContext(incoming);
  assert.equal(parent?.traceId, traceId, 'the client trace id is extracted');
  const headers: Record<string, string> = {};
  injectTraceContext(trace.wrapSpanContext({ traceId, spanId: 'b7ad6b7169203331', traceFlags: 1 }), headers);
  assert.equal(headers.traceparent, `00-${traceId}-b7ad6b7169203331-01`, 'the span is named in W3C format');
  assert.equal(trace.getSpanContext(traceContextFromHeaders({})), undefined, 'no header: a new root');
});
