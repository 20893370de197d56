import type { FastifyRequest } from 'fastify';
import type { AuditRecord } from '../../../core/audit/index.js';
import type { ApiError } from '../../../core/errors/index.js';
import type { KeyRecord } from '../../../core/keys/index.js';
import type { GatewayDeps } from '../deps.js';
import type { Reservation } from '../enforcement/enforce.js';
import { clientClosedRequest } from '../observability/request-labels.js';
import { answeringAttempt, isFailover, routingRecord, type AttemptRecord, type InterfaceName } from './attempts.js';

export type { InterfaceName } from './attempts.js';

/** The audit record of a finished (or failed) inference request. */
export function auditRecordOf(
  request: FastifyRequest,
  key: KeyRecord,
  interfaceName: InterfaceName,
  receivedAt: number,
  error: ApiError | undefined,
): AuditRecord {
  const routing = routingRecord(request);
  const answered = answeringAttempt(routing);
  // Failed because its client left (the supplier call was cancelled for it): a 499, as the
  // request line says — not the 400 of the cancellation error nobody was answered with. So is a
  // stream its client left after the 200 (request.clientClosed is only set when the answer did
  // not end): it was recorded 200 with its attempt's stream_interrupted, while the request line
  // and the metrics said 499. What was streamed stays charged (the cost is the routing record's).
  const outcome = request.clientClosed ? clientClosedRequest : error;
  return {
    requestId: String(request.id),
    timestamp: new Date(receivedAt).toISOString(),
    keyId: key.id,
    payerId: key.payerId ?? null,
    interface: interfaceName,
    model: routing.model ?? null,
    supplier: answered?.supplier ?? null,
    region: answered?.region ?? null,
    inputTokens: routing.usage?.inputTokens ?? 0,
    outputTokens: routing.usage?.outputTokens ?? 0,
    cachedInputTokens: routing.usage?.cachedInputTokens ?? 0,
    cacheWriteInputTokens: routing.usage?.cacheWriteInputTokens ?? 0,
    costUsd: routing.costUsd ?? 0,
    latencyMs: Math.round(Date.now() - receivedAt),
    status: outcome ? outcome.status : 200,
    code: outcome?.code ?? (answered?.outcome === 'failed' ? (answered.code ?? null) : null),
    failover: isFailover(routing, answered?.supplier),
    attempts: (routing.auditedAttempts = request.clientClosed
      ? routing.attempts.map((a) => cancelledForClient(a, !error && a === answered))
      : routing.attempts),
    session: routing.session ?? null,
    ...(routing.autoRouted && { autoRouted: true }),
  };
}

/**
 * An attempt of a request whose client left: the supplier call cancelled for it ends in the
 * cancellation's `request_rejected` (a 400 the supplier never sent), recorded as the request is —
 * 499 `client_closed_request` — so the audit log does not read as a supplier's refusal. So does
 * the attempt whose stream was being relayed when the client left (`relaying`: it answered, and
 * failed only after its status line) — cut for the client, not `502 stream_interrupted`.
 */
function cancelledForClient(attempt: AttemptRecord, relaying: boolean): AttemptRecord {
  if (attempt.outcome !== 'failed' || (attempt.code !== 'request_rejected' && !relaying)) return attempt;
  return { ...attempt, status: clientClosedRequest.status, code: clientClosedRequest.code };
}

/**
 * Closes the books of one inference request: the reservation is replaced by the actual cost
 * (released when the request failed) and the audit record goes to the durable buffer. Failures
 * here are logged, never turned into a client error: the answer has already been decided.
 */
export async function settleAndAudit(
  deps: GatewayDeps,
  request: FastifyRequest,
  key: KeyRecord,
  reservation: Reservation,
  interfaceName: InterfaceName,
  receivedAt: number,
  error: ApiError | undefined,
): Promise<void> {
  const record = auditRecordOf(request, key, interfaceName, receivedAt, error);
  const results = await Promise.allSettled([reservation.settle(record.costUsd), deps.audit.append(record)]);
  for (const result of results) {
    if (result.status === 'rejected')
      request.log.error({ err: result.reason, request_id: request.id }, 'settlement or audit append failed');
  }
}

/**
 * Refusals decided by the key's own policy: budget (402), model, region or payer (403), rate (429).
 * Not a model the gateway does not serve (404): its name is the caller's choice, and a refusal
 * before enforcement spends no rate limit, so recording it would let one key write rows (and
 * hourly roll-up rows, one per name) without bound. It is in the request line and the metrics.
 */
const refusedAtKey = new Set([402, 403, 429]);

/**
 * Records a request the key's policy refused before any supplier was tried (status and code,
 * no supplier, no cost), so a key's owner can see in its audit log why calls failed. Other
 * failures before routing (a store outage, bad input) are not the key's doing and are not
 * recorded. A failed append is logged; the refusal stands either way.
 */
export async function auditRefusal(
  deps: GatewayDeps,
  request: FastifyRequest,
  key: KeyRecord,
  interfaceName: InterfaceName,
  receivedAt: number,
  error: ApiError,
): Promise<void> {
  if (!refusedAtKey.has(error.status)) return;
  await deps.audit
    .append(auditRecordOf(request, key, interfaceName, receivedAt, error))
    .catch((e: unknown) => request.log.error({ err: e, request_id: request.id }, 'audit append of a refusal failed'));
}
