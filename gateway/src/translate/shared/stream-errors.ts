// How an error after the first byte reaches each client family: one renderer per family, used by
// every translator of that family, so the in-stream error shape is decided once.
import { renderErrorBody, type ApiError } from '../../../../core/errors/index.js';
import { dataFrame, eventFrame } from './sse-frames.js';

/** For OpenAI clients: a `data:` frame with a top-level `error`, which the SDK throws as APIError. */
export function openAiStreamErrorFrame(error: ApiError, requestId: string): string {
  return dataFrame({ error: renderErrorBody(error, requestId).error });
}

/**
 * For Anthropic clients: `event: error` with the whole error body; the SDK throws it and exposes
 * `error.details.error_code` as `errorCode`.
 */
export function anthropicStreamErrorFrame(error: ApiError, requestId: string): string {
  return eventFrame('error', renderErrorBody(error, requestId));
}

/**
 * For Responses API clients (the native lane): the standalone `error` event, whose top-level
 * `type`, `code`, `message` and `param` the OpenAI SDK reads as a ResponseErrorEvent, plus the
 * catalogue's `error` object (`code`, `type`, `message`, `human_message`, `retryable`, …) that
 * every interface's errors carry. The event's own `type` must stay "error", so the error's type
 * lives inside `error`, as in the other families' bodies.
 */
export function responsesStreamErrorFrame(error: ApiError, requestId: string, sequenceNumber?: number): string {
  const body = renderErrorBody(error, requestId).error;
  return eventFrame('error', {
    type: 'error',
    // Every Responses stream event is numbered; the error follows the last one the client got.
    ...(sequenceNumber !== undefined && { sequence_number: sequenceNumber }),
    code: error.code,
    message: error.message,
    param: error.param ?? null,
    human_message: error.humanMessage,
    error: body,
  });
}
