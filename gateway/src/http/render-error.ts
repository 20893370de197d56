import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, errorResponseHeaders, renderErrorBody, toApiError } from '../../../core/errors/index.js';
import { contentTypeRefusal, quotedType } from './json-body.js';

/** Longest path parameter routed (fastify's default is 100, shorter than a payer id may be). */
export const maxPathParameterLength = 500;

/**
 * Maps fastify's own failures (routing, body parsing, limits) to catalogue errors, so a client
 * never sees fastify's error shape or a 500 for something that has a code.
 */
export function fromFrameworkError(err: unknown, request?: FastifyRequest): ApiError {
  if (err instanceof ApiError) return err;
  const code = (err as { code?: unknown } | null)?.code;
  switch (code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError('request_too_large', { cause: err });
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      // A Content-Type fastify cannot parse ("json", "application/json;;"): named, with what is accepted.
      return request === undefined ? new ApiError('unsupported_media_type', { cause: err }) : mediaTypeRefusal(request);
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new ApiError('invalid_json', { cause: err });
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ApiError('invalid_request', { humanMessage: 'The Content-Length header does not match the body', cause: err });
    case 'FST_ERR_BAD_URL':
      return new ApiError('invalid_request', { humanMessage: 'The request path is not valid (malformed percent-encoding)', cause: err });
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return new ApiError('request_too_large', {
        status: 414,
        humanMessage: `A segment of the request path is longer than ${maxPathParameterLength} characters`,
        cause: err,
      });
    case 'FST_ERR_ASYNC_CONSTRAINT':
      return new ApiError('invalid_request', { cause: err });
    case 'FST_ERR_NOT_FOUND':
      // A method the router does not know at all (PRI, made-up tokens) skips the not-found handler.
      return new ApiError('not_found', { humanMessage: 'There is no such method and path on this gateway', cause: err });
    default: {
      // Any other refusal fastify makes of a request is the client's, whatever its code: never a 500.
      const status = (err as { statusCode?: unknown } | null)?.statusCode;
      if (typeof code === 'string' && code.startsWith('FST_') && typeof status === 'number' && status >= 400 && status < 500) {
        return new ApiError('invalid_request', { status, cause: err });
      }
      return toApiError(err);
    }
  }
}

/** fastify's 415 for a malformed Content-Type, as the route's own refusal would word it. */
function mediaTypeRefusal(request: FastifyRequest): ApiError {
  const sent = request.headers['content-type'];
  if (request.routeOptions.url === '/v1/audio/transcriptions') {
    return new ApiError('unsupported_media_type', {
      param: 'content-type',
      humanMessage: `Content-Type ${quotedType(String(sent))} is not a valid media type; send the audio as multipart/form-data with a "file" field`,
    });
  }
  return contentTypeRefusal(sent, 'malformed');
}

/** Sends a catalogue error: status, retry headers and the body both SDK families read. */
export function sendError(reply: FastifyReply, err: unknown): FastifyReply {
  const error = fromFrameworkError(err);
  return reply
    .code(error.status)
    .headers(errorResponseHeaders(error))
    .header('content-type', 'application/json; charset=utf-8')
    .send(renderErrorBody(error, String(reply.request.id)));
}
