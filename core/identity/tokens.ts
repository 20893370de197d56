// One-time tokens (email verification, password reset, SSO hand-off): the secret goes to the
// user, only its HMAC under the pepper is stored; consuming is one conditional UPDATE, so a
// token works once even when two requests race, and never after it expires.
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { hashSecret } from '../keys/index.js';
import { tokenLifetimeMs, type TokenPurpose } from './lifetimes.js';

/** A consumed token: whose it was and what it carried. */
export interface ConsumedToken {
  userId: number | null;
  payload: Record<string, unknown>;
}

/** Token secrets: 32 random bytes, base64url (43 characters). */
export const tokenPattern = /^[A-Za-z0-9_-]{43}$/;

/** Mints and consumes single-use, expiring tokens. */
export class OneTimeTokens {
  constructor(
    private readonly knex: Knex,
    private readonly pepper: string,
  ) {}

  /** A new token for `purpose`; the returned secret is the only copy. */
  async mint(purpose: TokenPurpose, userId: number | null, now: Date, payload: Record<string, unknown> = {}): Promise<string> {
    const secret = randomBytes(32).toString('base64url');
    await this.knex('one_time_tokens').insert({
      purpose,
      token_hash: hashSecret(secret, this.pepper),
      user_id: userId,
      payload: JSON.stringify(payload),
      expires_at: new Date(now.getTime() + tokenLifetimeMs[purpose]),
      created_at: now,
    });
    return secret;
  }

  /** Uses a token once: undefined when unknown, of another purpose, expired or already used. */
  async consume(purpose: TokenPurpose, secret: string, now: Date): Promise<ConsumedToken | undefined> {
    if (!tokenPattern.test(secret)) return undefined;
    const [row] = await this.knex('one_time_tokens')
      .where({ purpose, token_hash: hashSecret(secret, this.pepper) })
      .whereNull('used_at')
      .where('expires_at', '>', now)
      .update({ used_at: now })
      .returning(['user_id', 'payload']);
    if (!row) return undefined;
    return { userId: (row as { user_id: number | null }).user_id, payload: (row as { payload: Record<string, unknown> }).payload };
  }

  /** Who a token belongs to, if it is usable, without using it (a form can be checked first). */
  async peek(purpose: TokenPurpose, secret: string, now: Date): Promise<ConsumedToken | undefined> {
    if (!tokenPattern.test(secret)) return undefined;
    const row = await this.knex('one_time_tokens')
      .where({ purpose, token_hash: hashSecret(secret, this.pepper) })
      .whereNull('used_at')
      .where('expires_at', '>', now)
      .first(['user_id', 'payload']);
    return row ? { userId: row.user_id as number | null, payload: row.payload as Record<string, unknown> } : undefined;
  }

  /** Invalidates a user's unused tokens of one purpose (a new reset link voids the older ones). */
  async revokeUnused(purpose: TokenPurpose, userId: number, now: Date): Promise<void> {
    await this.knex('one_time_tokens').where({ purpose, user_id: userId }).whereNull('used_at').update({ used_at: now });
  }
}
