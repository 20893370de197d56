import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { createPlatformMetrics, type PlatformMetrics } from './platform-metrics.js';

/** Live readings the gateway's gauges take at scrape time (absent in tests that only need names). */
export interface GatewayGaugeSources {
  /** Every catalogue supplier with its region and whether its circuit is open right now. */
  circuits(): readonly { supplier: string; region: string; open: boolean }[];
  /** Audit records appended but not yet written to PostgreSQL (the stream's length). */
  auditBufferDepth(): Promise<number>;
  /** Age in seconds of the oldest audit record not yet written, or of the last batch written. */
  auditLagSeconds(): number;
  /** Requests this process has begun and not yet answered (streams included until their end). */
  requestsInFlight(): number;
}

/** Label names of the per-request counter; values are bounded (see docs/observability.md). */
export type RequestLabel = 'interface' | 'model' | 'supplier' | 'region' | 'status' | 'code';

/** The gateway's metric set. */
export interface GatewayMetrics extends PlatformMetrics {
  requests: Counter<RequestLabel>;
  requestDuration: Histogram<'interface' | 'model'>;
  upstreamDuration: Histogram<'supplier' | 'region' | 'outcome'>;
  upstreamAttempts: Counter<'supplier' | 'region' | 'outcome' | 'code'>;
  overhead: Histogram<'interface'>;
  timeToFirstByte: Histogram<'interface' | 'model' | 'supplier'>;
  tokens: Counter<'direction' | 'model' | 'supplier'>;
  cost: Counter<'model' | 'supplier'>;
  failovers: Counter<'model' | 'supplier' | 'code'>;
  rejections: Counter<'reason'>;
  circuitOpen: Gauge<'supplier' | 'region'>;
  auditBufferDepth: Gauge;
  auditLag: Gauge;
  requestsInFlight: Gauge;
}

/** Whole requests: from a millisecond to the longest stream a supplier timeout allows. */
const requestBuckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
/** The gateway's own time per request: tens of microseconds when healthy. */
const overheadBuckets = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25];
/** First byte of a stream: what a chat user perceives as the model "thinking". */
const firstByteBuckets = [0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30];

/**
 * Registers the gateway's metrics on `registry`. The gauges read `sources` when scraped, so
 * nothing on the request path keeps them up to date.
 */
export function createGatewayMetrics(registry: Registry, sources?: GatewayGaugeSources): GatewayMetrics {
  const registers = [registry];
  return {
    ...createPlatformMetrics(registry),
    requests: new Counter({
      name: 'svc_gateway_requests_total',
      help: 'Requests answered, by interface, catalogue model, answering supplier and region, HTTP status and catalogue error code',
      labelNames: ['interface', 'model', 'supplier', 'region', 'status', 'code'],
      registers,
    }),
    requestDuration: new Histogram({
      name: 'svc_gateway_request_duration_seconds',
      help: 'Time from request received to response finished (streams included)',
      labelNames: ['interface', 'model'],
      buckets: requestBuckets,
      registers,
    }),
    upstreamDuration: new Histogram({
      name: 'svc_gateway_upstream_duration_seconds',
      help: 'Duration of each supplier attempt (failed ones included), by outcome',
      labelNames: ['supplier', 'region', 'outcome'],
      buckets: requestBuckets,
      registers,
    }),
    upstreamAttempts: new Counter({
      name: 'svc_gateway_upstream_attempts_total',
      help: 'Supplier attempts, by outcome and catalogue error code (none when ok)',
      labelNames: ['supplier', 'region', 'outcome', 'code'],
      registers,
    }),
    overhead: new Histogram({
      name: 'svc_gateway_overhead_seconds',
      help: "Request duration minus the time spent in supplier attempts: the gateway's own cost",
      labelNames: ['interface'],
      buckets: overheadBuckets,
      registers,
    }),
    timeToFirstByte: new Histogram({
      name: 'svc_gateway_time_to_first_byte_seconds',
      help: 'Streams only: time from request received to the first byte sent to the client',
      labelNames: ['interface', 'model', 'supplier'],
      buckets: firstByteBuckets,
      registers,
    }),
    tokens: new Counter({
      name: 'svc_gateway_tokens_total',
      help: 'Tokens reported by suppliers, by direction (input, output)',
      labelNames: ['direction', 'model', 'supplier'],
      registers,
    }),
    cost: new Counter({
      name: 'svc_gateway_cost_usd_total',
      help: 'Cost of answered requests at catalogue prices, in US dollars',
      labelNames: ['model', 'supplier'],
      registers,
    }),
    failovers: new Counter({
      name: 'svc_gateway_failovers_total',
      help: 'Moves to the next candidate after a failed attempt, by the supplier failed over from and its error code',
      labelNames: ['model', 'supplier', 'code'],
      registers,
    }),
    rejections: new Counter({
      name: 'svc_gateway_rejections_total',
      help: 'Requests refused by enforcement before any supplier call, by reason (rate_limit, budget, wallet)',
      labelNames: ['reason'],
      registers,
    }),
    // Read at scrape time from a count the request hooks keep: nothing on the request path but
    // an increment and a decrement. Summed over a cluster's workers (the gauge default).
    requestsInFlight: new Gauge({
      name: 'svc_gateway_requests_in_flight',
      help: 'Requests begun and not yet answered, streams until their end (a signal for autoscaling)',
      registers,
      collect() {
        if (sources) this.set(sources.requestsInFlight());
      },
    }),
    circuitOpen: new Gauge({
      name: 'svc_gateway_supplier_circuit_open',
      help: "1 while the supplier's circuit is open on this replica (routed around), else 0",
      labelNames: ['supplier', 'region'],
      registers,
      aggregator: 'max',
      collect() {
        if (!sources) return;
        for (const c of sources.circuits()) this.set({ supplier: c.supplier, region: c.region }, c.open ? 1 : 0);
      },
    }),
    ...registerAuditGauges(registry, sources),
  };
}

/** What the audit gauges read at scrape time. */
export type AuditGaugeSources = Pick<GatewayGaugeSources, 'auditBufferDepth' | 'auditLagSeconds'>;

/**
 * The audit writer's gauges, for a gateway and for a separate audit writer process alike (same
 * names, so the dashboards and SvcAuditLagHigh / SvcAuditBufferGrowing cover both).
 */
export function registerAuditGauges(
  registry: Registry,
  sources: AuditGaugeSources | undefined,
): { auditBufferDepth: Gauge; auditLag: Gauge } {
  const registers = [registry];
  return {
    auditBufferDepth: new Gauge({
      name: 'svc_gateway_audit_buffer_depth',
      help: 'Audit records in the durable buffer not yet written to PostgreSQL (shared by all replicas)',
      registers,
      // One shared stream: a cluster of gateway processes reports it once, not once per process.
      aggregator: 'max',
      async collect() {
        // A store outage must not fail the whole scrape: the gauge keeps its last value and
        // the failure shows in svc_store_errors_total.
        if (!sources) return;
        try {
          this.set(await sources.auditBufferDepth());
        } catch {
          // keep the last value
        }
      },
    }),
    auditLag: new Gauge({
      name: 'svc_gateway_audit_lag_seconds',
      help: 'Age of the oldest audit record this replica is writing, or of the last batch it wrote',
      registers,
      aggregator: 'max',
      collect() {
        if (sources) this.set(sources.auditLagSeconds());
      },
    }),
  };
}
