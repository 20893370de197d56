import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ModelRoute } from '../../../../core/config/index.js';
import { ApiError } from '../../../../core/errors/index.js';
import { requireKey } from '../../auth/request-caller.js';
import type { GatewayDeps } from '../../deps.js';
import { ClientDisconnect } from '../../http/client-abort.js';
import { validateBody } from '../../http/validate.js';
import { pickCandidates } from '../../routing/candidates.js';
import { routingHeaders } from '../../routing/routing-headers.js';
import type { TokenUsage } from '../../routing/cost.js';
import { callOpenAiChat } from '../../suppliers/openai/chat.js';
import { chatCompletionRequest } from './schema.js';

interface OpenAiUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number } | null;
}

function usageOf(usage: OpenAiUsage | undefined): TokenUsage | undefined {
  if (!usage) return undefined;
  return {
    inputTokens: usage.prompt_tokens ?? 0,
    outputTokens: usage.completion_tokens ?? 0,
    cachedInputTokens: usage.prompt_tokens_details?.cached_tokens ?? 0,
  };
}

/** Chooses the route this request goes to; translation to other protocols arrives with issue 3. */
function routeForChat(candidates: readonly ModelRoute[], model: string): ModelRoute {
  for (const route of candidates) {
    switch (route.supplier.protocol) {
      case 'openai':
        return route;
      case 'anthropic':
      case 'openai-responses':
        continue; // no chat-completions translator for these protocols yet
      default: {
        const unreachable: never = route.supplier.protocol;
        throw new Error(`unknown protocol ${String(unreachable)}`);
      }
    }
  }
  throw new ApiError('capability_unsupported', {
    param: 'model',
    humanMessage: `No supplier of "${model}" speaks the chat-completions protocol on this gateway`,
  });
}

async function chatCompletions(deps: GatewayDeps, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const key = requireKey(request);
  const body = validateBody(chatCompletionRequest, request.body);
  const route = routeForChat(pickCandidates(deps.catalogue, body.model, key, body.region), body.model);
  const started = performance.now();
  const upstream = await callOpenAiChat(deps.upstream, route, body, String(request.id), new ClientDisconnect(reply));

  if (body.stream === true) {
    // Same protocol on both sides: the SSE bytes pass through unchanged, flushed as they come.
    reply.hijack();
    const raw = reply.raw;
    raw.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-request-id': String(request.id),
      ...routingHeaders(route, false, performance.now() - started),
    });
    try {
      for await (const chunk of upstream.body) raw.write(chunk);
    } catch {
      // After the first byte the status is sent: the failure becomes an in-stream error event.
      const error = new ApiError('stream_interrupted', { details: { supplier: route.supplier.name } });
      raw.write(`data: ${JSON.stringify({ error: { code: error.code, type: error.type, message: error.message, human_message: error.humanMessage } })}\n\n`);
    }
    raw.end();
    return reply;
  }

  let parsed: { model?: string; usage?: OpenAiUsage } & Record<string, unknown>;
  try {
    parsed = (await upstream.body.json()) as typeof parsed;
  } catch (cause) {
    throw new ApiError('non_json_provider_response', { cause, details: { supplier: route.supplier.name } });
  }
  parsed.model = body.model;
  void reply.headers(routingHeaders(route, false, performance.now() - started, usageOf(parsed.usage)));
  return parsed;
}

/** `POST /v1/chat/completions` (OpenAI chat-completions interface). */
export function registerChatCompletionRoutes(app: FastifyInstance, deps: GatewayDeps): void {
  app.post('/v1/chat/completions', (request, reply) => chatCompletions(deps, request, reply));
}
