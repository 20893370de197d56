// Loads the signed-in user from the session on every request, fresh from the database, so a
// role change or suspension takes effect at the next click; and the one guard every protected
// route uses: requireAction(action), which asks core/identity's isAllowed.
import type { NextFunction, Request, Response } from 'express';
import { ApiError } from '../../../core/errors/index.js';
import { wantsJson } from './errors.js';
import { isAllowed, type Action, type Target, type User, type UserRepository } from '../../../core/identity/index.js';
import { isLanguage, languageCookie, languageCookieOptions, readCookie } from './layout.js';

declare module 'express-serve-static-core' {
  interface Request {
    /** The signed-in, active user, when there is one. */
    user?: User;
  }
}

/** Ends the session's sign-in (destroys its row); resolves when done. */
export function endSession(req: Request): Promise<void> {
  return new Promise((resolve, reject) => {
    if (!req.session) return resolve();
    req.session.destroy((error: unknown) => (error ? reject(error) : resolve()));
  });
}

/** Middleware: req.user and the layout's user summary from the session, or nothing. */
export function loadPrincipal(users: UserRepository, clock: () => number, absoluteMs: number) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const userId = req.session?.userId;
    if (userId === undefined) return next();
    const user = await users.findById(userId);
    const tooOld = clock() - (req.session.signedInAt ?? 0) > absoluteMs;
    if (!user || user.status !== 'active' || tooOld) {
      await endSession(req);
      return next();
    }
    req.user = user;
    // Whatever is rendered for a signed-in user is theirs (their name in the header at least):
    // never kept by the browser, so Back after signing out asks the server — and gets the sign-in
    // page — instead of showing the account from the cache. Static files are served before this.
    res.set('cache-control', 'private, no-store');
    const layout = res.locals.layout as { user?: unknown; language: string };
    layout.user = { id: user.id, displayName: user.displayName, role: user.role };
    // A browser without the language cookie (a new device, cleared cookies) takes the profile's.
    if (!isLanguage(readCookie(req, languageCookie)) && isLanguage(user.language)) {
      layout.language = user.language;
      res.cookie(languageCookie, user.language, languageCookieOptions);
    }
    res.locals.user = { id: user.id };
    next();
  };
}

/**
 * The guard of every signed-in route: no user → invalid_session (browsers are sent to sign in),
 * not allowed → 403 forbidden. `target` picks what the request acts on, for scoped actions.
 */
export function requireAction(action: Action, target?: (req: Request) => Target | Promise<Target>) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const user = req.user;
    if (!user) {
      if (req.method === 'GET' && !wantsJson(req)) return res.redirect(303, `/login?return_to=${encodeURIComponent(req.originalUrl)}`);
      return next(new ApiError('invalid_session', { humanMessage: 'Sign in to continue' }));
    }
    const on = target ? await target(req) : undefined;
    if (!isAllowed(user, action, on)) return next(new ApiError('forbidden'));
    next();
  };
}
