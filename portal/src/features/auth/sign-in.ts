// The one way every sign-in ends (password, both identity providers, the reseller hand-off):
// a new session id (no fixation), only the user id and sign-in time stored server-side.
import type { Request } from 'express';

/** Regenerates the session and records the signed-in user. */
export function signIn(req: Request, userId: number, now: number): Promise<void> {
  return new Promise((resolve, reject) => {
    req.session.regenerate((error: unknown) => {
      if (error) return reject(error);
      req.session.userId = userId;
      req.session.signedInAt = now;
      req.session.save((saveError: unknown) => (saveError ? reject(saveError) : resolve()));
    });
  });
}
