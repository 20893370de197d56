import type { FastifyRequest } from 'fastify';
import { ApiError } from '../../../core/errors/index.js';
import type { KeyRecord } from '../../../core/keys/index.js';
import type { Caller } from './authenticate.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the authentication hook on every /v1 route. */
    caller?: Caller;
  }
}

/** The calling key of an inference request; the admin key manages keys and does not call models. */
export function requireKey(request: FastifyRequest): KeyRecord {
  const caller = request.caller;
  if (caller?.kind === 'key') return caller.key;
  if (caller?.kind === 'admin') {
    throw new ApiError('permission_denied', {
      humanMessage: 'The admin key manages keys; call models with an API key (svc-sk-… or svc_…)',
    });
  }
  throw new ApiError('missing_api_key');
}
