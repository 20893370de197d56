import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ModelCapability, ModelRoute } from '../../../core/config/index.js';
import { ApiError, toApiError } from '../../../core/errors/index.js';
import { requireKey } from '../auth/request-caller.js';
import type { GatewayDeps } from '../deps.js';
import { RequestCancellation } from '../http/cancellation.js';
import { autoModel, resolveAutoModel } from '../routing/auto-model.js';
import { pickCandidates } from '../routing/candidates.js';
import { orderCandidates } from '../routing/order-candidates.js';
import { routingHeaders, usageHeaders } from '../routing/routing-headers.js';
import { sessionOf, type SessionInputs } from '../routing/session-affinity.js';
import { chatProtocols, createTranslator, type ClientRequest } from '../translate/factory.js';
import { enforce, worstCaseUsd } from '../enforcement/enforce.js';
import { settleAndAudit, type InterfaceName } from './accounting.js';
import { noteUsage, routingRecord } from './attempts.js';
import { tryCandidates } from './failover.js';
import { callSupplier } from './supplier-call.js';
import { streamToClient } from './stream-to-client.js';

/** A chat-style request of either family, ready to route. */
export interface ChatInference {
  client: ClientRequest;
  model: string;
  region: string | undefined;
  stream: boolean;
  /** Capabilities beyond `chat` this request needs (tools, vision); only computed for `auto`. */
  needs: () => readonly ModelCapability[];
  session: SessionInputs;
  /** Upper bound of the request's input size in UTF-8 bytes (bounds its input tokens). */
  inputBytes: number;
  /** The client's output cap, if it set one. */
  maxOutputTokens: number | undefined;
  interfaceName: InterfaceName;
}

/** Cap on `max_tokens` sent to suppliers that require it when neither client nor catalogue gives one. */
const fallbackMaxTokens = 4096;

/**
 * One chat request through the gateway, for both client families: resolve `auto`, pick
 * region-compliant candidates, order them (session, priority, weight, health), then try them in
 * turn — translate, call, answer (JSON or stream) with routing headers — failing over on
 * supplier failures before the first byte. The pieces each live in one place; this wires them.
 */
export async function serveChat(deps: GatewayDeps, request: FastifyRequest, reply: FastifyReply, inference: ChatInference): Promise<unknown> {
  const key = requireKey(request);
  const record = routingRecord(request);
  // Listen for the client leaving from the start, before any await.
  const cancellation = new RequestCancellation(reply);
  const publicModel =
    inference.model === autoModel
      ? resolveAutoModel(deps.catalogue, key, {
          capabilities: ['chat', ...inference.needs()],
          // ~4 bytes per token: a rough size is all the context-window check needs.
          promptTokens: Math.ceil(inference.inputBytes / 4),
          region: inference.region,
          protocols: chatProtocols,
        })
      : inference.model;
  record.model = publicModel;
  const compliant = pickCandidates(deps.catalogue, publicModel, key, inference.region, { protocols: chatProtocols, capability: 'chat' });
  const session = sessionOf(inference.session);
  record.session = session?.id;
  const receivedAt = deps.clock();
  // The session look-up and the enforcement script go out in the same tick, so the store client
  // pipelines them: one round trip before the supplier call (design.md, hot-path budget).
  // Any compliant route may end up answering, so the worst case is taken over all of them.
  const reserve = worstCaseUsd(compliant, inference.inputBytes, inference.maxOutputTokens, fallbackMaxTokens);
  const [pinned, reservation] = await Promise.all([
    // A session store failure must neither fail the request nor leak the reservation.
    session ? deps.sessions.pinned(key.id, session).catch(() => null) : null,
    enforce(deps, key, reserve, String(request.id)),
  ]);
  const candidates = orderCandidates(compliant, { pinnedSupplier: pinned, isOpen: (s) => deps.health.isOpen(s), random: Math.random }).slice(
    0,
    deps.maxAttempts,
  );

  let result: { route: ModelRoute; body: unknown };
  try {
    result = await tryCandidates(request, candidates, cancellation, deps.health, async (route, index, signal) => {
      const translator = createTranslator(inference.client, route.supplier.protocol, {
        route,
        publicModel,
        defaultMaxTokens: route.model.maxOutputTokens ?? fallbackMaxTokens,
      });
      const call = translator.request();
      const started = performance.now();
      const upstream = await callSupplier(deps.upstream, route, call.path, call.body, { requestId: String(request.id), clientHeaders: request.headers }, signal);
      const headers = () => ({ 'x-svc-model': publicModel, ...routingHeaders(route, index > 0, performance.now() - started) });
      if (inference.stream) {
        const outcome = await streamToClient(reply, upstream, translator, headers, () => usageHeaders(route, translator.usage()));
        noteUsage(record, route, translator.usage());
        return { value: { route, body: reply as unknown }, lateError: outcome.error };
      }
      let json: unknown;
      try {
        json = await upstream.body.json();
      } catch (cause) {
        throw new ApiError('non_json_provider_response', { cause, details: { supplier: route.supplier.name } });
      }
      const body = translator.response(json);
      noteUsage(record, route, translator.usage());
      void reply.headers({ ...headers(), ...usageHeaders(route, record.usage) });
      return { value: { route, body } };
    });
  } catch (thrown) {
    await settleAndAudit(deps, request, key, reservation, inference.interfaceName, receivedAt, toApiError(thrown));
    throw thrown;
  }
  // Pin, settlement and audit append leave in the same tick: one pipelined round trip after.
  if (session && pinned !== result.route.supplier.name) {
    void deps.sessions.pin(key.id, session, result.route.supplier.name).catch((e: unknown) => request.log.warn({ err: e }, 'session pin failed'));
  }
  await settleAndAudit(deps, request, key, reservation, inference.interfaceName, receivedAt, undefined);
  return result.body;
}
