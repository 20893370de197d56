// The same-origin check on every state-changing request (POST, PUT, PATCH, DELETE): Origin,
// else Referer, else Sec-Fetch-Site must say the request comes from the portal's own origin.
// A request with none of the three is not from a browser page of another site (browsers send
// Origin on every cross-origin POST), so API clients without them pass.
import type { NextFunction, Request, Response } from 'express';
import { ApiError } from '../../../core/errors/index.js';

const unsafeMethods = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** Whether the request's origin headers agree with `origin` (undefined when none is present). */
export function sameOriginVerdict(
  headers: { origin?: string | undefined; referer?: string | undefined; fetchSite?: string | undefined },
  origin: string,
): boolean | undefined {
  if (headers.origin !== undefined) return headers.origin === origin;
  if (headers.referer !== undefined) {
    try {
      return new URL(headers.referer).origin === origin;
    } catch {
      return false;
    }
  }
  if (headers.fetchSite !== undefined) return headers.fetchSite === 'same-origin' || headers.fetchSite === 'none';
  return undefined;
}

/** Middleware refusing cross-origin state changes with 403 csrf_rejected before any handler runs. */
export function sameOriginCheck(baseUrl: string) {
  const origin = new URL(baseUrl).origin;
  return (req: Request, _res: Response, next: NextFunction): void => {
    if (!unsafeMethods.has(req.method)) return next();
    const verdict = sameOriginVerdict(
      { origin: req.get('origin'), referer: req.get('referer'), fetchSite: req.get('sec-fetch-site') },
      origin,
    );
    if (verdict === false)
      return next(
        new ApiError('csrf_rejected', { humanMessage: 'This request did not come from a page of this portal, so it was refused' }),
      );
    next();
  };
}
