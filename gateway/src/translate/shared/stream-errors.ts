// How an error after the first byte reaches each client family: one renderer per family, used by
// every translator of that family, so the in-stream error shape is decided once.
import { renderErrorBody, type ApiError } from '../../../../core/errors/index.js';
import { dataFrame, eventFrame } from './sse-frames.js';

/** For OpenAI clients: a `data:` frame with a top-level `error`, which the SDK throws as APIError. */
export function openAiStreamErrorFrame(error: ApiError): string {
  return dataFrame({ error: renderErrorBody(error).error });
}

/**
 * For Anthropic clients: `event: error` with the whole error body; the SDK throws it and exposes
 * `error.details.error_code` as `errorCode`.
 */
export function anthropicStreamErrorFrame(error: ApiError): string {
  return eventFrame('error', renderErrorBody(error));
}
