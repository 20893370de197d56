import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ModelRoute } from '../../../core/config/index.js';
import { toApiError } from '../../../core/errors/index.js';
import { requireKey } from '../auth/request-caller.js';
import type { GatewayDeps } from '../deps.js';
import { enforce, longestLifeMs, type Reservation } from '../enforcement/enforce.js';
import { RequestCancellation } from '../http/cancellation.js';
import { pickCandidates, type InterfaceNeeds } from '../routing/candidates.js';
import { rankCandidates } from '../routing/order-candidates.js';
import type { Session } from '../routing/session-affinity.js';
import { auditRefusal, settleAndAudit } from './accounting.js';
import { answeringAttempt, routingRecord, type InterfaceName } from './attempts.js';
import { tryCandidates, type Attempt } from './failover.js';
import { releaseStreamEnd } from './held-stream-end.js';

/** What one endpoint contributes to the shared pipeline; everything else is the same for all. */
export interface RoutedCall<T> {
  interfaceName: InterfaceName;
  /** The public model id (after `auto` was resolved). */
  model: string;
  /** The call-level region, if the client set one. */
  region: string | undefined;
  /** Supplier protocols the endpoint can speak and the capability the model must have. */
  needs: InterfaceNeeds;
  /** The request's session, for affinity (chat only). */
  session?: Session | undefined;
  /** The request's worst-case cost over the routes it may take: what enforcement reserves. */
  worstCaseUsd(compliant: readonly ModelRoute[]): number;
  /** One attempt against one route: call the supplier and answer the client. */
  attempt: Attempt<T>;
  /**
   * Checks too expensive to run for a request its key's limits would refuse (tokenizing inputs):
   * run once enforcement admitted it, before any supplier is called. A refusal here is settled
   * and audited like any failed request.
   */
  admitted?: () => Promise<void>;
}

/**
 * The request pipeline every routed endpoint shares (docs/architecture.md §The request hot path,
 * steps 3–7): region-compliant candidates with the needed capability, the enforcement
 * script (rate, budget and wallet reservation) pipelined with the session look-up, ordering by
 * session, priority, weight and health, the attempts with failover, then settlement and the
 * audit record — on success and on failure alike.
 */
export async function serveRouted<T>(deps: GatewayDeps, request: FastifyRequest, reply: FastifyReply, call: RoutedCall<T>): Promise<T> {
  const key = requireKey(request);
  const record = routingRecord(request);
  record.interfaceName = call.interfaceName;
  record.model = call.model;
  // Listen for the client leaving from the start, before any await.
  const cancellation = new RequestCancellation(reply, deps.inFlight);
  request.inPipeline = true;
  try {
    return await serveWith(deps, request, reply, call, key, record, cancellation);
  } finally {
    cancellation.finished();
    request.inPipeline = false;
    // What a client that left meanwhile is still owed: its metrics, once its record is made (app.ts).
    request.afterPipeline?.();
  }
}

/** serveRouted's work once the request is registered as in flight. */
async function serveWith<T>(
  deps: GatewayDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  call: RoutedCall<T>,
  key: ReturnType<typeof requireKey>,
  record: ReturnType<typeof routingRecord>,
  cancellation: RequestCancellation,
): Promise<T> {
  const receivedAt = deps.clock();
  const session = call.session;
  record.session = session?.id;
  let compliant: ReturnType<typeof pickCandidates>;
  let sticky: boolean;
  let pinned: string | null;
  let reservation: Reservation;
  try {
    compliant = pickCandidates(deps.catalogue, call.model, key, call.region, call.needs);
    // Affinity matters only where there is a choice of route. (A conversation's first turn is
    // looked up too: identical openings share a pin, so they share the supplier's prompt cache.)
    sticky = session !== undefined && compliant.length > 1;
    // The session look-up and the enforcement script go out in the same tick, so the store client
    // pipelines them: one round trip before the supplier call (docs/architecture.md, the hot path's budget).
    [pinned, reservation] = await Promise.all([
      // A session store failure must neither fail the request nor leak the reservation.
      sticky && session ? deps.sessions.pinned(key.id, session).catch(() => null) : null,
      enforce(deps, key, call.worstCaseUsd(compliant), String(request.id), () => longestLifeMs(compliant, deps.maxAttempts)),
    ]);
  } catch (thrown) {
    await auditRefusal(deps, request, key, call.interfaceName, receivedAt, toApiError(thrown));
    throw thrown;
  }
  const ranking = rankCandidates(compliant, {
    pinnedSupplier: pinned,
    isOpen: (s) => deps.health.isOpen(s) || deps.credentials.exhaustedByName(s),
    random: Math.random,
  });
  record.preferredSupplier = ranking.preferred?.supplier.name;
  const candidates = ranking.ordered.slice(0, deps.maxAttempts);

  let value: T;
  try {
    try {
      await call.admitted?.();
      value = await tryCandidates(request, candidates, cancellation, deps, call.attempt);
    } catch (thrown) {
      await settleAndAudit(deps, request, key, reservation, call.interfaceName, receivedAt, toApiError(thrown));
      throw thrown;
    }
    // Pin, settlement and audit append leave in the same tick: one pipelined round trip after.
    const answeredBy = answeringAttempt(record)?.supplier;
    if (sticky && session && answeredBy && pinned !== answeredBy) {
      void deps.sessions.pin(key.id, session, answeredBy).catch((e: unknown) => request.log.warn({ err: e }, 'session pin failed'));
    }
    await settleAndAudit(deps, request, key, reservation, call.interfaceName, receivedAt, undefined);
  } finally {
    // A stream's last frames, held until its record is appended (held-stream-end.ts) — or until
    // whatever stopped that from happening was thrown: a stream is never left open.
    releaseStreamEnd(reply);
  }
  return value;
}
