// OpenAI Responses stream events → chat.completion.chunk events, fed to the client's
// OpenAI-protocol translator as if an OpenAI chat supplier had sent them. One instance per
// request; all stream state lives here.
import { ApiError } from '../../../../core/errors/index.js';
import type { OpenAiChatChunk } from '../../wire/openai-chat.js';
import type { ResponsesObject } from '../../wire/openai-responses.js';
import type { SseEvent } from '../types.js';
import { newChatCompletionId, unixSeconds } from '../shared/ids.js';
import { isJsonObject, parseJson } from '../shared/safe-json.js';
import { chatUsageFrom, finishReasonFrom } from './response.js';
import { responsesError } from '../shared/supplier-answers.js';

type ChunkDelta = OpenAiChatChunk['choices'][number]['delta'];

/** Turns Responses events into chat chunk events (`data:` JSON, then `[DONE]`). */
export class ResponsesToChatStream {
  private readonly id = newChatCompletionId();
  private readonly created = unixSeconds();
  private model = '';
  private roleSent = false;
  /** Chat tool-call index of each function-call output item. */
  private readonly toolIndexByOutput = new Map<number, number>();
  private terminal = false;

  /** True once the terminal event (`response.completed` / `response.incomplete`) arrived. */
  get complete(): boolean {
    return this.terminal;
  }

  /** One upstream event → zero or more chat chunk events. Throws ApiError for `response.failed` and `error`. */
  next(event: SseEvent): SseEvent[] {
    if (this.terminal) return [];
    const data = parseJson(event.data);
    if (!isJsonObject(data)) {
      throw new ApiError('invalid_backend_response', { humanMessage: 'The supplier sent a stream event that is not a JSON object' });
    }
    const type = typeof data.type === 'string' ? data.type : (event.event ?? '');
    switch (type) {
      case 'response.created':
      case 'response.in_progress': {
        const response = isJsonObject(data.response) ? (data.response as ResponsesObject) : {};
        if (typeof response.model === 'string') this.model = response.model;
        return this.role();
      }
      case 'response.output_text.delta':
        return typeof data.delta === 'string' && data.delta !== '' ? [...this.role(), this.chunk({ content: data.delta })] : [];
      case 'response.refusal.delta':
        return typeof data.delta === 'string' && data.delta !== '' ? [...this.role(), this.chunk({ refusal: data.delta })] : [];
      case 'response.output_item.added': {
        const item = isJsonObject(data.item) ? data.item : {};
        if (item.type !== 'function_call' || typeof data.output_index !== 'number') return [];
        const index = this.toolIndexByOutput.size;
        this.toolIndexByOutput.set(data.output_index, index);
        const id = typeof item.call_id === 'string' ? item.call_id : String(item.id ?? '');
        const name = typeof item.name === 'string' ? item.name : '';
        return [...this.role(), this.chunk({ tool_calls: [{ index, id, type: 'function', function: { name, arguments: '' } }] })];
      }
      case 'response.function_call_arguments.delta': {
        const index = typeof data.output_index === 'number' ? this.toolIndexByOutput.get(data.output_index) : undefined;
        if (index === undefined || typeof data.delta !== 'string' || data.delta === '') return [];
        return [this.chunk({ tool_calls: [{ index, function: { arguments: data.delta } }] })];
      }
      case 'response.completed':
      case 'response.incomplete':
        return this.finish(isJsonObject(data.response) ? (data.response as ResponsesObject) : {});
      case 'response.failed':
        throw responsesError(isJsonObject(data.response) ? data.response.error : undefined);
      case 'error':
        throw responsesError(data);
      default:
        // Everything else (content_part, *.done, reasoning, built-in tools) has no chat counterpart.
        return [];
    }
  }

  private chunk(delta: ChunkDelta, finishReason: OpenAiChatChunk['choices'][number]['finish_reason'] = null): SseEvent {
    const chunk: OpenAiChatChunk = {
      id: this.id,
      object: 'chat.completion.chunk',
      created: this.created,
      model: this.model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
      // As a chat supplier asked for usage marks every chunk before its usage chunk (the client's
      // translator drops the field when the client did not ask).
      usage: null,
    };
    return { data: JSON.stringify(chunk) };
  }

  private role(): SseEvent[] {
    if (this.roleSent) return [];
    this.roleSent = true;
    return [this.chunk({ role: 'assistant', content: '' })];
  }

  /** The finish chunk, the usage chunk and `[DONE]`, as an OpenAI supplier ends a stream with include_usage. */
  private finish(response: ResponsesObject): SseEvent[] {
    this.terminal = true;
    const usage: OpenAiChatChunk = {
      id: this.id,
      object: 'chat.completion.chunk',
      created: this.created,
      model: this.model,
      choices: [],
      usage: chatUsageFrom(response.usage),
    };
    return [
      ...this.role(),
      this.chunk({}, finishReasonFrom(response, this.toolIndexByOutput.size > 0)),
      { data: JSON.stringify(usage) },
      { data: '[DONE]' },
    ];
  }
}
