// Which organisation an administrator's organisation-wide change acts on: their own, or for
// owners and platform admins the one they name with `org_id`. One rule for every such route.
import type { Request } from 'express';
import { z } from 'zod';
import { ApiError } from '../../../core/errors/index.js';
import { maxRowId, rowIdText } from './validation.js';

/** A positive integer id, as a JSON number or form text. */
export const idField = z.union([z.number().int().positive().max(maxRowId), rowIdText('must be a positive whole number')]);

/** The organisation a request acts on: the caller's, or for owners and platform admins `org_id`. */
export function targetOrganisation(req: Request, requested: number | undefined): number {
  const user = req.user!;
  if (requested !== undefined && requested !== user.organisationId) {
    if (user.role !== 'owner' && user.role !== 'platform_admin') throw new ApiError('forbidden');
    return requested;
  }
  if (user.organisationId === null)
    throw new ApiError('validation_error', {
      status: 422,
      humanMessage: 'You are not in an organisation: name one with org_id',
      param: 'org_id',
    });
  return user.organisationId;
}
