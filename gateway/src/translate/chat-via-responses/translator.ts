// Chat clients of either family served by OpenAI Responses API suppliers: the client's
// OpenAI-protocol translator does the family work (Anthropic ↔ OpenAI chat, or the OpenAI
// passthrough), and this bridge carries OpenAI chat ↔ Responses underneath it. So every
// translation rule (tools, stop reasons, usage, errors, stream framing) stays in one place.
import { ApiError } from '../../../../core/errors/index.js';
import type { TokenUsage } from '../../routing/cost.js';
import type { ChatCompletionRequest } from '../../interfaces/chat-completions/schema.js';
import type { ClientFamily, SseEvent, Translator, UpstreamCall } from '../types.js';
import { responsesRequestFrom } from './request.js';
import { asResponse, chatCompletionFrom } from './response.js';
import { ResponsesToChatStream } from './stream.js';

/** Client (either family) → `openai-responses` supplier, through the client's chat translator. */
export class ChatViaResponses implements Translator {
  private readonly stream = new ResponsesToChatStream();

  constructor(
    /** The client's translator toward an OpenAI chat supplier. */
    private readonly chat: Translator,
    private readonly family: ClientFamily,
  ) {}

  /** `POST /responses` with the chat request mapped; throws `unsupported_parameter` for what it cannot carry. */
  request(): UpstreamCall {
    const call = this.chat.request();
    return { path: '/responses', body: responsesRequestFrom(call.body as ChatCompletionRequest, this.family) };
  }

  response(upstream: unknown): unknown {
    return this.chat.response(chatCompletionFrom(asResponse(upstream)));
  }

  streamEvent(event: SseEvent): string {
    let out = '';
    for (const chunk of this.stream.next(event)) out += this.chat.streamEvent(chunk);
    return out;
  }

  /** A Responses stream has no `[DONE]`: without its terminal event the stream was cut short. */
  streamEnd(): string {
    if (!this.stream.complete) throw new ApiError('stream_interrupted');
    return this.chat.streamEnd();
  }

  streamError(error: ApiError, requestId: string): string {
    return this.chat.streamError(error, requestId);
  }

  usage(): TokenUsage | undefined {
    return this.chat.usage();
  }
}
