import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ModelCapability, ModelRoute } from '../../../core/config/index.js';
import { ApiError } from '../../../core/errors/index.js';
import { requireKey } from '../auth/request-caller.js';
import type { GatewayDeps } from '../deps.js';
import { ClientDisconnect } from '../http/client-abort.js';
import { autoModel, resolveAutoModel } from '../routing/auto-model.js';
import { pickCandidates } from '../routing/candidates.js';
import { routingHeaders } from '../routing/routing-headers.js';
import { chatProtocols, createTranslator, type ClientRequest } from '../translate/factory.js';
import { callSupplier } from './supplier-call.js';
import { streamToClient } from './stream-to-client.js';

/** A chat-style request of either family, ready to route. */
export interface ChatInference {
  client: ClientRequest;
  model: string;
  region: string | undefined;
  stream: boolean;
  /** Capabilities beyond `chat` this request needs (tools, vision), for `auto`. */
  needs: readonly ModelCapability[];
  /** Rough prompt size for `auto`'s context-window check. */
  promptTokens: number;
}

/** Cap on `max_tokens` sent to suppliers that require it when neither client nor catalogue gives one. */
const fallbackMaxTokens = 4096;

/**
 * One chat request through the gateway, for both client families: resolve `auto`, pick
 * region-compliant candidates, translate, call the supplier, answer (JSON or stream) with the
 * routing headers. The pieces each live in one place; this only wires them in order.
 */
export async function serveChat(deps: GatewayDeps, request: FastifyRequest, reply: FastifyReply, inference: ChatInference): Promise<unknown> {
  const key = requireKey(request);
  const publicModel =
    inference.model === autoModel
      ? resolveAutoModel(deps.catalogue, key, { capabilities: ['chat', ...inference.needs], promptTokens: inference.promptTokens, region: inference.region, protocols: chatProtocols })
      : inference.model;
  const candidates = pickCandidates(deps.catalogue, publicModel, key, inference.region, { protocols: chatProtocols, capability: 'chat' });
  const route: ModelRoute = candidates[0]!;
  const translator = createTranslator(inference.client, route.supplier.protocol, {
    route,
    publicModel,
    defaultMaxTokens: route.model.maxOutputTokens ?? fallbackMaxTokens,
  });
  const call = translator.request();
  const started = performance.now();
  const disconnect = new ClientDisconnect(reply);
  const upstream = await callSupplier(deps.upstream, route, call.path, call.body, { requestId: String(request.id), clientHeaders: request.headers }, disconnect);
  const modelHeader = { 'x-svc-model': publicModel };

  if (inference.stream) {
    await streamToClient(reply, upstream, translator, () => ({ ...modelHeader, ...routingHeaders(route, false, performance.now() - started) }));
    return reply;
  }
  let json: unknown;
  try {
    json = await upstream.body.json();
  } catch (cause) {
    throw new ApiError('non_json_provider_response', { cause, details: { supplier: route.supplier.name } });
  }
  const body = translator.response(json);
  void reply.headers({ ...modelHeader, ...routingHeaders(route, false, performance.now() - started, translator.usage()) });
  return body;
}
