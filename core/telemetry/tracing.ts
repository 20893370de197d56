import { ROOT_CONTEXT, trace, type Context, type Span, type Tracer } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import type { NodeSDK as NodeSdk } from '@opentelemetry/sdk-node';
import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { createRequire } from 'node:module';
import { ConfigError } from '../config/settings.js';

/** Trace exporters the SDK can build from `OTEL_TRACES_EXPORTER` with what we install. */
const knownExporters = new Set(['otlp', 'console', 'zipkin', 'none']);

/** Whether this process traces, and why (logged at start so nobody has to guess). */
export interface TracingDecision {
  enabled: boolean;
  reason: string;
}

/**
 * Reads the standard OTEL_* variables once. The one deliberate departure from the
 * specification: with `OTEL_TRACES_EXPORTER` unset the SDK would default to OTLP and send to
 * localhost:4318 whether or not a collector is there; we trace only when an exporter is named
 * or an OTLP endpoint is given, so a gateway without a collector pays nothing for tracing.
 */
export function decideTracing(env: Record<string, string | undefined>): TracingDecision {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return { enabled: false, reason: 'OTEL_SDK_DISABLED=true' };
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((e) => e.trim().toLowerCase())
    .filter((e) => e !== '');
  const unknown = exporters.filter((e) => !knownExporters.has(e));
  if (unknown.length > 0) {
    throw new ConfigError(
      `invalid settings:\n  - OTEL_TRACES_EXPORTER: unsupported exporter ${unknown.join(', ')} (use otlp, console, zipkin or none)`,
    );
  }
  if (exporters.length > 0) {
    const active = exporters.filter((e) => e !== 'none');
    return active.length > 0
      ? { enabled: true, reason: `OTEL_TRACES_EXPORTER=${active.join(',')}` }
      : { enabled: false, reason: 'OTEL_TRACES_EXPORTER=none' };
  }
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  if (endpoint) return { enabled: true, reason: `OTLP endpoint ${endpoint}` };
  return { enabled: false, reason: 'no trace exporter configured (set OTEL_TRACES_EXPORTER or OTEL_EXPORTER_OTLP_ENDPOINT)' };
}

/**
 * A process's tracing. `tracer` is undefined when tracing is off: instrumented code checks it
 * once per request and skips span work entirely, which is what makes "off" free.
 */
export interface Tracing {
  readonly tracer: Tracer | undefined;
  readonly decision: TracingDecision;
  /** Exports spans still buffered (tests, shutdown). */
  forceFlush(): Promise<void>;
  shutdown(): Promise<void>;
}

/** Tracing switched off: no SDK, no tracer. */
export const tracingOff: Tracing = {
  tracer: undefined,
  decision: { enabled: false, reason: 'tracing not started' },
  forceFlush: async () => undefined,
  shutdown: async () => undefined,
};

/** Options of startTracing. */
export interface TracingOptions {
  /** `service.name` unless OTEL_SERVICE_NAME says otherwise (e.g. `svc-gateway`). */
  serviceName: string;
  env?: Record<string, string | undefined>;
  /**
   * Span processors to use instead of the exporters OTEL_* names (tests pass an in-memory
   * exporter); giving them switches tracing on.
   */
  spanProcessors?: SpanProcessor[];
}

/**
 * Starts the OpenTelemetry Node SDK for traces when the environment asks for it (see
 * decideTracing), with exporters, sampler and resource from the standard OTEL_* variables.
 * The SDK registers itself globally, so call this once per process, from the entry point.
 * Metrics go through prom-client and logs through pino, so the SDK's own metric and log
 * pipelines stay off.
 */
export function startTracing(options: TracingOptions): Tracing {
  const env = options.env ?? process.env;
  const decision = options.spanProcessors ? { enabled: true, reason: 'span processors given' } : decideTracing(env);
  if (!decision.enabled) return { ...tracingOff, decision };
  // Loaded only when tracing is on: the SDK with its exporters is ~7 MB of long-lived heap (which
  // every full collection of the serving thread marks again) and ~0.5 s of start-up that a
  // process without tracing would carry for nothing.
  const { NodeSDK } = createRequire(import.meta.url)('@opentelemetry/sdk-node') as { NodeSDK: typeof NodeSdk };
  const sdk = new NodeSDK({
    // An explicit service name would override OTEL_SERVICE_NAME, so it is only the fallback.
    ...(!env.OTEL_SERVICE_NAME && { serviceName: options.serviceName }),
    ...(options.spanProcessors && { spanProcessors: options.spanProcessors }),
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: [],
  });
  sdk.start();
  const tracer = trace.getTracer(options.serviceName);
  return {
    tracer,
    decision,
    forceFlush: async () => {
      // The SDK registers its provider behind the API's proxy; the delegate can flush.
      const provider = trace.getTracerProvider() as { getDelegate?: () => { forceFlush?: () => Promise<void> } };
      await provider.getDelegate?.().forceFlush?.();
    },
    shutdown: () => sdk.shutdown(),
  };
}

const propagator = new W3CTraceContextPropagator();
const headerGetter = {
  keys: (carrier: Record<string, string | string[] | undefined>) => Object.keys(carrier),
  get: (carrier: Record<string, string | string[] | undefined>, key: string) => carrier[key],
};
const headerSetter = {
  set: (carrier: Record<string, string>, key: string, value: string) => {
    carrier[key] = value;
  },
};

/** The parent context a client's `traceparent` header names (or the root context without one). */
export function traceContextFromHeaders(headers: Record<string, string | string[] | undefined>): Context {
  return propagator.extract(ROOT_CONTEXT, headers, headerGetter);
}

/** Adds `traceparent` (and `tracestate`) for `span` to outgoing request headers. */
export function injectTraceContext(span: Span, headers: Record<string, string>): void {
  propagator.inject(trace.setSpan(ROOT_CONTEXT, span), headers, headerSetter);
}
