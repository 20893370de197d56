import type { FastifyRequest } from 'fastify';
import type { ModelRoute } from '../../../core/config/index.js';
import { ApiError, toApiError } from '../../../core/errors/index.js';
import { AttemptSignal, type RequestCancellation } from '../http/cancellation.js';
import { credentialFailureKind, type CredentialPool } from '../routing/credential-pool.js';
import type { SupplierHealth } from '../routing/supplier-health.js';
import { beginAttempt, finishAttempt, routingRecord } from './attempts.js';
import { deadlineError, firstByteError } from './supplier-call.js';

/**
 * Whether a failed attempt may be retried on the next candidate: rate limits, supplier-side
 * failures, timeouts and connection errors. A client error (400, 404, 413, 422…) would fail on
 * every supplier alike, so it is returned at once.
 */
export function isFailoverable(error: ApiError): boolean {
  return error.status === 429 || error.status >= 500;
}

/**
 * Whether a failure is the gateway's own (a bug, a stack overflow while building the upstream
 * body): anything thrown that is not a catalogue error, or `internal_error`. It says nothing
 * about the supplier, so it never counts against the supplier's shared health — otherwise one
 * tenant's hostile request could open a circuit for everyone — and it is not retried elsewhere.
 */
export function isGatewayFault(thrown: unknown): boolean {
  return !(thrown instanceof ApiError) || thrown.code === 'internal_error';
}

/**
 * What an attempt produced. `lateError` is a failure after the response had started (a stream
 * cut mid-way): the client already has its in-stream error, so there is no failover, but the
 * attempt counts as failed for the record and the supplier's health.
 */
export interface AttemptResult<T> {
  value: T;
  lateError?: ApiError | undefined;
}

/** The shared state attempts report to: each supplier's circuit and each pooled credential. */
export interface SupplierState {
  health: SupplierHealth;
  credentials: CredentialPool;
}

/** One attempt against one route; resolves with the result or throws (then maybe failover). */
export type Attempt<T> = (route: ModelRoute, index: number, signal: AttemptSignal) => Promise<AttemptResult<T>>;

/**
 * Tries the ordered candidates until one succeeds. Failover happens only on failures before the
 * first byte reaches the client (an attempt that already started a response resolves, carrying
 * its in-stream error itself). Each attempt is recorded; a failed supplier is reported to the
 * shared health without waiting. When every candidate fails, the first (the primary's) error —
 * the original provider status and code — is what the client sees.
 *
 * A supplier with a credential pool is tried with one credential at a time: a failure that is
 * the credential's (rate-limited, rejected) sidelines it and the same supplier is tried again
 * with the next one before failing over; only when none is left does the failure count against
 * the supplier's circuit.
 */
export async function tryCandidates<T>(
  request: FastifyRequest,
  candidates: readonly ModelRoute[],
  cancellation: RequestCancellation,
  suppliers: SupplierState,
  attempt: Attempt<T>,
): Promise<T> {
  const { health, credentials } = suppliers;
  const record = routingRecord(request);
  const warn = (e: unknown) => request.log.warn({ err: e }, 'supplier health update failed');
  let firstError: ApiError | undefined;
  let firstErrorAttempt = 0;
  /** A failure after the first was worth retrying (the answer is the first failure, its advice not). */
  let laterRetryable = false;
  let lastFailureAt: number | undefined;
  for (const [index, route] of candidates.entries()) {
    const supplier = route.supplier.name;
    const tried = new Set<string>();
    for (;;) {
      const credential = credentials.pick(route.supplier, tried);
      if (credential) tried.add(credential.name);
      const clock = beginAttempt(route, lastFailureAt);
      const signal = new AttemptSignal(
        cancellation,
        route.supplier,
        () => deadlineError(route),
        () => firstByteError(route),
      );
      signal.credential = credential;
      // Tracing on: the attempt's client span, named to the supplier through `traceparent`.
      const span = request.trace?.startAttempt(route, index, record);
      if (span) signal.traceHeaders = span.headers;
      record.inFlightSupplier = supplier;
      const close = (error: ApiError | undefined) => {
        record.inFlightSupplier = undefined;
        const attemptRecord = finishAttempt(clock, error, 200, credential?.name);
        record.attempts.push(attemptRecord);
        record.upstreamMs += performance.now() - clock.startedPerf;
        span?.end(attemptRecord, record, route);
      };
      try {
        const { value, lateError } = await attempt(route, index, signal);
        close(lateError);
        // A client hanging up (or the gateway failing itself) says nothing about the supplier's
        // health, nor does a timeout while the relay waited for a slow client to read.
        const heldByClient = lateError?.code === 'provider_timeout' && (record.waitedOnClientMs ?? 0) > 0;
        if (!cancellation.aborted && !heldByClient && !(lateError && isGatewayFault(lateError))) {
          const update = lateError ? health.recordFailure(supplier, lateError) : health.recordSuccess(supplier);
          void update.catch(warn);
          if (!lateError && credential) void credentials.recordSuccess(supplier, credential.name).catch(warn);
        }
        return value;
      } catch (thrown) {
        lastFailureAt = performance.now();
        const error = toApiError(thrown);
        close(error);
        if (cancellation.aborted || isGatewayFault(thrown) || !isFailoverable(error)) throw error;
        if (firstError === undefined) {
          firstError = error;
          firstErrorAttempt = record.attempts.length - 1;
        } else if (error.retryable) laterRetryable = true;
        const credentialFault = credential ? credentialFailureKind(error) : undefined;
        // Reported on a later tick so that building the store command does not delay the next
        // attempt: failover selection stays in-memory work only.
        if (credential && credentialFault)
          setImmediate(() => void credentials.recordFailure(supplier, credential.name, credentialFault, error).catch(warn));
        // The credential's fault, and the pool has another: the same supplier again.
        if (credentialFault && credentials.hasUntried(route.supplier, tried)) continue;
        setImmediate(() => void health.recordFailure(supplier, error).catch(warn));
        break;
      } finally {
        signal.dispose();
      }
    }
  }
  if (firstError) record.answeringIndex = firstErrorAttempt;
  if (!firstError) throw new ApiError('no_providers_available');
  // The first failure is the answer, but not its retry advice alone: a first supplier refusing the
  // gateway's credential (not retryable) with a later one overloaded (retryable) is worth a retry.
  throw laterRetryable ? firstError.withRetryable(true) : firstError;
}
