// An OpenAI Responses API response → an OpenAI chat completion (the shape the client's
// OpenAI-protocol translator reads next), and the pieces the stream bridge shares with it.
import { ApiError } from '../../../../core/errors/index.js';
import type { OpenAiChatCompletion, OpenAiToolCall, OpenAiUsage } from '../../wire/openai-chat.js';
import type { ResponsesObject, ResponsesUsage } from '../../wire/openai-responses.js';
import type { ClientFinishReason } from '../shared/stop-reasons.js';
import { newChatCompletionId, unixSeconds } from '../shared/ids.js';
import { isJsonObject } from '../shared/safe-json.js';
import { responsesError, supplierErrorIn } from '../shared/supplier-answers.js';

/** Responses usage → chat usage (input includes cached tokens in both). */
export function chatUsageFrom(usage: ResponsesUsage | null | undefined): OpenAiUsage {
  const input = usage?.input_tokens ?? 0;
  const output = usage?.output_tokens ?? 0;
  return {
    prompt_tokens: input,
    completion_tokens: output,
    total_tokens: input + output,
    prompt_tokens_details: { cached_tokens: usage?.input_tokens_details?.cached_tokens ?? 0 },
    completion_tokens_details: { reasoning_tokens: usage?.output_tokens_details?.reasoning_tokens ?? 0 },
  };
}

/**
 * Why a response ended, as a chat finish reason: cut by the output limit → `length`, by the
 * content filter → `content_filter`, otherwise `tool_calls` when it called tools, else `stop`.
 */
export function finishReasonFrom(response: ResponsesObject, calledTools: boolean): ClientFinishReason {
  if (response.status === 'incomplete') {
    const reason = response.incomplete_details?.reason;
    if (reason === 'content_filter') return 'content_filter';
    return 'length';
  }
  return calledTools ? 'tool_calls' : 'stop';
}

/** An upstream body checked just enough to be read as a Responses API response. */
export function asResponse(upstream: unknown): ResponsesObject {
  const error = supplierErrorIn('openai-responses', upstream);
  if (error) throw error;
  if (!isJsonObject(upstream) || !Array.isArray(upstream.output)) {
    throw new ApiError('invalid_backend_response', {
      humanMessage: 'The supplier answered with something other than a Responses API response',
    });
  }
  const response = upstream as ResponsesObject;
  if (response.status === 'failed' || response.status === 'cancelled') throw responsesError(response.error);
  return response;
}

/** The chat completion for a whole response: message text (refusals apart), function calls, usage. */
export function chatCompletionFrom(response: ResponsesObject): OpenAiChatCompletion {
  let text = '';
  let refusal = '';
  const toolCalls: OpenAiToolCall[] = [];
  // Read as plain JSON: a supplier's items may lack fields the wire types promise.
  for (const item of (response.output ?? []) as unknown[]) {
    if (!isJsonObject(item)) continue;
    if (item.type === 'message' && Array.isArray(item.content)) {
      for (const part of item.content as unknown[]) {
        if (!isJsonObject(part)) continue;
        if (part.type === 'output_text' && typeof part.text === 'string') text += part.text;
        if (part.type === 'refusal' && typeof part.refusal === 'string') refusal += part.refusal;
      }
    } else if (item.type === 'function_call' && typeof item.name === 'string') {
      const callId = typeof item.call_id === 'string' ? item.call_id : String(item.id ?? '');
      toolCalls.push({
        id: callId,
        type: 'function',
        function: { name: item.name, arguments: typeof item.arguments === 'string' ? item.arguments : '' },
      });
    }
    // Reasoning items and built-in tool calls have no chat-completions counterpart: skipped.
  }
  return {
    id: newChatCompletionId(),
    object: 'chat.completion',
    created: response.created_at ?? unixSeconds(),
    model: response.model ?? '',
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: text === '' && (toolCalls.length > 0 || refusal !== '') ? null : text,
          refusal: refusal === '' ? null : refusal,
          ...(toolCalls.length > 0 && { tool_calls: toolCalls }),
        },
        logprobs: null,
        finish_reason: finishReasonFrom(response, toolCalls.length > 0),
      },
    ],
    usage: chatUsageFrom(response.usage),
  };
}
