// Server-side portal sessions in PostgreSQL (shared by every portal replica, embedded PGlite
// included). The cookie holds only the opaque id; the row holds the data and the user it
// belongs to, so ending all of one user's sessions is one DELETE.
import type { Knex } from 'knex';

/** A stored session: its data and when it expires (idle lifetime, renewed on use). */
export interface StoredSession {
  data: Record<string, unknown>;
  expiresAt: Date;
}

/** Reads and writes the portal_sessions table. */
export class SessionRepository {
  constructor(private readonly knex: Knex) {}

  /** The live session with this id (an expired one is as good as absent). */
  async get(sid: string, now: Date): Promise<StoredSession | undefined> {
    const row = await this.knex('portal_sessions').where({ sid }).where('expires_at', '>', now).first();
    return row ? { data: row.data as Record<string, unknown>, expiresAt: row.expires_at as Date } : undefined;
  }

  /** Creates or replaces a session. */
  async save(sid: string, userId: number | null, data: Record<string, unknown>, expiresAt: Date, now: Date): Promise<void> {
    await this.knex('portal_sessions')
      .insert({ sid, user_id: userId, data: JSON.stringify(data), expires_at: expiresAt, created_at: now })
      .onConflict('sid')
      .merge(['user_id', 'data', 'expires_at']);
  }

  /** Pushes the idle expiry of a session further out. */
  async touch(sid: string, expiresAt: Date): Promise<void> {
    await this.knex('portal_sessions').where({ sid }).update({ expires_at: expiresAt });
  }

  /** Ends one session. */
  async destroy(sid: string): Promise<void> {
    await this.knex('portal_sessions').where({ sid }).delete();
  }

  /** Ends every session of a user (sign-out everywhere, suspension, password reset). */
  async destroyForUser(userId: number): Promise<number> {
    return this.knex('portal_sessions').where({ user_id: userId }).delete();
  }

  /** Ends every session of a user but one (a password changed from that session). */
  async destroyOthersForUser(userId: number, keptSid: string): Promise<number> {
    return this.knex('portal_sessions').where({ user_id: userId }).whereNot({ sid: keptSid }).delete();
  }

  /** Deletes expired rows (housekeeping; reads already ignore them). */
  async purgeExpired(now: Date): Promise<number> {
    return this.knex('portal_sessions').where('expires_at', '<=', now).delete();
  }
}
