import type { FastifyInstance } from 'fastify';
import type { ModelCapability } from '../../../../core/config/index.js';
import type { GatewayDeps } from '../../deps.js';
import { validateBody } from '../../http/validate.js';
import { requestBytes } from '../../http/request-bytes.js';
import { chatInputCap } from '../../tokens/input-cap.js';
import { serveChat } from '../../pipeline/inference.js';
import { chatSessionInputs } from '../../routing/session-inputs.js';
import { chatCompletionRequest, type ChatCompletionRequest } from './schema.js';

/** Capabilities a chat-completions request needs beyond plain chat (used by `auto`). */
export function chatNeeds(body: ChatCompletionRequest): ModelCapability[] {
  const needs: ModelCapability[] = [];
  if (body.tools && body.tools.length > 0) needs.push('tools');
  const hasImage = body.messages.some((m) => Array.isArray(m.content) && m.content.some((p) => p.type === 'image_url'));
  if (hasImage) needs.push('vision');
  return needs;
}

/**
 * The most output a request may ask for, reserved against its budget and wallet. A request may
 * send both `max_completion_tokens` and the older `max_tokens`, and a supplier of the OpenAI
 * protocol receives both as sent: one that reads only `max_tokens` may write up to it, so the
 * larger is reserved (the smaller let such a supplier spend past the reservation — outside probe).
 */
export function outputTokenBound(body: Pick<ChatCompletionRequest, 'max_completion_tokens' | 'max_tokens'>): number | undefined {
  const asked = [body.max_completion_tokens, body.max_tokens].filter((n): n is number => typeof n === 'number');
  return asked.length === 0 ? undefined : Math.max(...asked);
}

/** `POST /v1/chat/completions` (OpenAI chat-completions interface). */
export function registerChatCompletionRoutes(app: FastifyInstance, deps: GatewayDeps): void {
  app.post('/v1/chat/completions', (request, reply) => {
    const body = validateBody(chatCompletionRequest, request.body);
    const bytes = requestBytes(request);
    return serveChat(deps, request, reply, {
      client: { family: 'openai', body },
      model: body.model,
      region: body.region,
      stream: body.stream === true,
      needs: () => chatNeeds(body),
      session: chatSessionInputs(request.raw, body),
      inputBytes: bytes,
      inputCap: chatInputCap(body, bytes),
      maxOutputTokens: outputTokenBound(body),
      choices: body.n ?? 1,
      interfaceName: 'chat.completions',
    });
  });
}
