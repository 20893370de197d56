// Server-side sessions: express-session with its store on the portal_sessions table (so every
// replica shares them, on PostgreSQL and embedded PGlite alike), an opaque HttpOnly SameSite=Lax
// cookie (Secure over https), an idle lifetime renewed on each request and an absolute one
// counted from sign-in.
import { createHmac } from 'node:crypto';
import type { RequestHandler } from 'express';
import session, { Store, type SessionData } from 'express-session';
import type { SessionRepository } from '../../../core/identity/index.js';

/** The session cookie's name. */
export const sessionCookie = 'svc_portal_sid';

declare module 'express-session' {
  interface SessionData {
    /** The signed-in user. */
    userId: number;
    /** When the user signed in (ms), for the absolute lifetime. */
    signedInAt: number;
    /** Admins: false shows only their own data (POST /dashboard/toggle-admin-mode); default on. */
    adminMode?: boolean;
    /** Platform admins: the organisation the admin views are filtered to (POST /dashboard/set-admin-org). */
    adminOrgId?: number;
  }
}

/** express-session's store interface over SessionRepository. */
class PortalSessionStore extends Store {
  constructor(
    private readonly sessions: SessionRepository,
    private readonly idleMs: number,
  ) {
    super();
  }

  private expiry(data: SessionData): Date {
    return data.cookie?.expires ? new Date(data.cookie.expires) : new Date(Date.now() + this.idleMs);
  }

  override get(sid: string, callback: (err: unknown, session?: SessionData | null) => void): void {
    this.sessions.get(sid, new Date()).then(
      (found) => callback(null, (found?.data as unknown as SessionData | undefined) ?? null),
      (error: unknown) => callback(error),
    );
  }

  override set(sid: string, data: SessionData, callback?: (err?: unknown) => void): void {
    this.sessions.save(sid, data.userId ?? null, data as unknown as Record<string, unknown>, this.expiry(data), new Date()).then(
      () => callback?.(),
      (error: unknown) => callback?.(error),
    );
  }

  override touch(sid: string, data: SessionData, callback?: () => void): void {
    this.sessions.touch(sid, this.expiry(data)).then(
      () => callback?.(),
      () => callback?.(),
    );
  }

  override destroy(sid: string, callback?: (err?: unknown) => void): void {
    this.sessions.destroy(sid).then(
      () => callback?.(),
      (error: unknown) => callback?.(error),
    );
  }
}

/** The session middleware. The cookie signature key is derived from the pepper, never the pepper itself. */
export function sessionMiddleware(options: {
  sessions: SessionRepository;
  pepper: string;
  idleMs: number;
  secure: boolean;
}): RequestHandler {
  return session({
    name: sessionCookie,
    secret: createHmac('sha256', options.pepper).update('portal session cookie').digest('base64url'),
    store: new PortalSessionStore(options.sessions, options.idleMs),
    resave: false,
    // No cookie and no row for anonymous visitors: a session exists only after sign-in.
    saveUninitialized: false,
    rolling: true,
    proxy: true,
    cookie: { httpOnly: true, sameSite: 'lax', secure: options.secure, maxAge: options.idleMs, path: '/' },
  });
}
