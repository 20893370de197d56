import type { FastifyRequest } from 'fastify';
import type { AuditAttempt } from '../../../core/audit/index.js';
import type { ModelRoute } from '../../../core/config/index.js';
import type { ApiError } from '../../../core/errors/index.js';
import { boundedUsage, callCostUsd, type MediaUsage, type TokenUsage, type UsageBounds } from '../routing/cost.js';
import type { CountedSide } from './charged-usage.js';

/** One supplier attempt of a request, failed or not; all of them go to the request's audit record. */
export type AttemptRecord = AuditAttempt;

/** The client-facing interface of a routed request, as the audit log and metrics name it. */
export type InterfaceName =
  'chat.completions' | 'messages' | 'responses' | 'embeddings' | 'rerank' | 'audio.transcriptions' | 'audio.speech';

/** Routing facts of a request, kept for the request log line, the audit record and metrics. */
export interface RoutingRecord {
  /**
   * How long a stream's relay waited for the client to take more (http/backpressure.ts): a
   * supplier that times out meanwhile was held back by the client, so it counts against nobody's health.
   */
  waitedOnClientMs?: number;
  interfaceName: InterfaceName | undefined;
  model: string | undefined;
  attempts: AttemptRecord[];
  session: string | undefined;
  /** The client asked for `auto` and the autorouter chose the model. */
  autoRouted?: boolean;
  usage: TokenUsage | undefined;
  costUsd: number | undefined;
  /** Time spent in supplier attempts, unrounded (ms): request time minus this is the gateway's overhead. */
  upstreamMs: number;
  /**
   * Streams: ms from the request's arrival (fastify's `reply.elapsedTime`) to the first byte
   * written to the client; set by the streaming code, read by the time-to-first-byte metric.
   */
  firstByteMs: number | undefined;
  /** The first-ranked supplier (routing/order-candidates.ts `preferred`), set once candidates are ranked. */
  preferredSupplier?: string | undefined;
  /** The supplier reported more tokens than the call can have used; the usage was cut to the bound (boundedUsage). */
  usageCapped?: { inputTokens: number; outputTokens: number; audioSeconds?: number };
  /** The supplier reported no usage (or zero) for these sides: the gateway counted them (charged-usage.ts). */
  usageCounted?: readonly CountedSide[];
  /**
   * Index in `attempts` of the attempt whose answer or error the client got, where it is not the
   * last: when every candidate failed, the client gets the first failure (failover.ts).
   */
  answeringIndex?: number;
  /**
   * The supplier of the attempt under way, until it ends (then it is in `attempts`): what a
   * request line written while it runs — the client left, 499 — names as still in flight.
   */
  inFlightSupplier: string | undefined;
  /**
   * The attempts as the audit record has them (accounting.ts: those cancelled for a client that
   * left read 499 client_closed_request), once it is made: the metrics count the same.
   */
  auditedAttempts?: AttemptRecord[];
}

/**
 * The attempt whose answer (or error) the client got: the last one, or the first failure when
 * every candidate failed. The one rule behind the supplier named in the metrics, the request log,
 * the trace, the audit record and the session pin — the same supplier the error body names.
 */
export function answeringAttempt(record: RoutingRecord | undefined): AttemptRecord | undefined {
  if (record === undefined) return undefined;
  return record.attempts[record.answeringIndex ?? record.attempts.length - 1];
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the inference pipeline; absent for requests that never reached routing. */
    routing?: RoutingRecord;
  }
}

/** The request's routing record, created on first use. */
export function routingRecord(request: FastifyRequest): RoutingRecord {
  request.routing ??= {
    interfaceName: undefined,
    model: undefined,
    attempts: [],
    session: undefined,
    usage: undefined,
    costUsd: undefined,
    upstreamMs: 0,
    firstByteMs: undefined,
    inFlightSupplier: undefined,
    auditedAttempts: undefined,
  };
  return request.routing;
}

/**
 * Whether `supplier` answering this request is a failover: it is not the preferred (first-ranked)
 * supplier, whether the preferred one failed or was skipped because its circuit was open. The
 * one rule behind `x-svc-failover`, the audit record's `failover` and the request log line.
 */
export function isFailover(record: RoutingRecord, supplier: string | undefined): boolean {
  if (supplier === undefined) return false;
  if (record.preferredSupplier === undefined) return record.attempts.length > 1;
  return supplier !== record.preferredSupplier;
}

/** Timing of one attempt between `begin` and `finish`. */
export interface AttemptClock {
  route: ModelRoute;
  startedAt: number;
  startedPerf: number;
  selectionMs: number | undefined;
}

/** Starts timing an attempt; `previousFailureAt` (performance.now) gives the failover selection time. */
export function beginAttempt(route: ModelRoute, previousFailureAt: number | undefined): AttemptClock {
  const startedPerf = performance.now();
  return {
    route,
    startedAt: Date.now(),
    startedPerf,
    selectionMs: previousFailureAt === undefined ? undefined : startedPerf - previousFailureAt,
  };
}

/** Closes an attempt into its record. */
export function finishAttempt(clock: AttemptClock, error: ApiError | undefined, status = 200, credential?: string): AttemptRecord {
  return {
    supplier: clock.route.supplier.name,
    region: clock.route.supplier.region,
    startedAt: clock.startedAt,
    latencyMs: Math.round(performance.now() - clock.startedPerf),
    outcome: error ? 'failed' : 'ok',
    status: error ? error.status : status,
    code: error?.code,
    selectionMs: clock.selectionMs === undefined ? undefined : Math.round(clock.selectionMs * 1000) / 1000,
    ...(credential !== undefined && { credential }),
  };
}

/**
 * Records the usage of the answering route, within what the call can have used (boundedUsage:
 * the request's input cap, its max output tokens per each of its answers, the model's window), and
 * its cost at the catalogue's prices. What a supplier over-reported is kept in `usageCapped` for
 * the request log.
 */
export function noteUsage(
  record: RoutingRecord,
  route: ModelRoute,
  reported: TokenUsage | undefined,
  media?: MediaUsage,
  bounds: UsageBounds = {},
): void {
  let usage = reported;
  if (reported) {
    const bounded = boundedUsage(route.model, reported, bounds);
    usage = bounded.usage;
    if (bounded.capped) record.usageCapped = { inputTokens: reported.inputTokens, outputTokens: reported.outputTokens };
  }
  record.usage = usage;
  record.costUsd = usage || media ? callCostUsd(route.model, usage, media) : undefined;
}
