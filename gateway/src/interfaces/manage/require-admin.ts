import type { FastifyRequest } from 'fastify';
import { ApiError } from '../../../../core/errors/index.js';

/** Management routes are for the root admin key (portal users join later). */
export function requireAdmin(request: FastifyRequest): void {
  if (request.caller?.kind === 'admin') return;
  throw new ApiError('permission_denied', { humanMessage: 'The Management API needs the admin key' });
}
