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
      maxOutputTokens: body.max_completion_tokens ?? body.max_tokens ?? undefined,
      choices: body.n ?? 1,
      interfaceName: 'chat.completions',
    });
  });
}
