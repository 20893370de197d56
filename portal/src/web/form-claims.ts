// A form that makes a secret (a new key, an API token) or opens a checkout (add funds) carries a
// one-use token, so that sending it again — reloading the page that answered its POST (which shows
// the secret), or a second click while the first is under way — opens what it already made instead
// of making a second one. The
// token is claimed in the shared store with one atomic increment before anything is made, so two
// requests racing with it make one on any replica; a JSON client sends no token and is not affected.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Request } from 'express';
import { ApiError } from '../../../core/errors/index.js';
import type { Store } from '../../../core/store/index.js';
import type { Logger } from 'pino';

/** How long a claimed token is remembered: longer than anyone keeps a form open. */
const rememberMs = 24 * 3_600_000;
/** How long a second submission waits for the first one's key to be made. */
const waitForFirstMs = 10_000;
const tokenPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A fresh token for a form. */
export function newFormToken(): string {
  return randomUUID();
}

/** The form token a request sent, if it is one this portal could have issued. */
export function sentFormToken(req: Request): string | undefined {
  const token = (req.body as { form_token?: unknown } | undefined)?.form_token;
  return typeof token === 'string' && tokenPattern.test(token) ? token : undefined;
}

/** The body without the form token, which is no field of what the form makes. */
export function withoutFormToken(body: unknown): unknown {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return body;
  const { form_token: _token, ...fields } = body as Record<string, unknown>;
  return fields;
}

/** One form's tokens per user in the store: who sent each first, and the id (a number, or an export's uuid) of what it made. */
export class FormClaims {
  /** `form`: which form, in the store keys (`key-form` is the new-key form's). */
  constructor(
    private readonly store: Store,
    private readonly logger: Logger,
    private readonly form: string,
  ) {}

  private claimKey = (userId: number, token: string) => `portal:${this.form}:${userId}:${token}:claims`;
  private madeKey = (userId: number, token: string) => `portal:${this.form}:${userId}:${token}:key`;

  /**
   * Claims `token` for this request. `first` when no request sent it before: make the key or
   * token, then call `made`. Otherwise the id of what the first one made, once it is made (waited for).
   */
  async claim(userId: number, token: string): Promise<{ first: true } | { first: false; madeId: string }> {
    let claims: number;
    try {
      claims = await this.store.incrBy(this.claimKey(userId, token), 1, rememberMs);
    } catch (error) {
      // The store is out: the key is made without the check (a repeat may make a second key),
      // as the portal makes keys while the store is out.
      this.logger.warn({ err: error, form: this.form }, 'form token not checked: the store is unavailable');
      return { first: true };
    }
    if (claims === 1) return { first: true };
    const deadline = Date.now() + waitForFirstMs;
    for (;;) {
      const made = await this.store.get(this.madeKey(userId, token));
      if (made !== null) return { first: false, madeId: made };
      if (Date.now() > deadline)
        throw new ApiError('conflict', {
          humanMessage: 'This form was sent already and what it makes is still being made: look for it in the list in a moment',
        });
      await sleep(100);
    }
  }

  /** Records the key or token a claimed form token made, for the submissions after it; best effort (it exists either way). */
  async made(userId: number, token: string, madeId: number | string): Promise<void> {
    await this.store
      .set(this.madeKey(userId, token), String(madeId), { ttlMs: rememberMs })
      .catch((error: unknown) => this.logger.warn({ err: error, form: this.form }, 'form token: what it made could not be recorded'));
  }

  /**
   * Makes what the form asks for once per form token: `made` with what `make` answered, or the
   * id the first submission made (`already`, as text). Without a token (a JSON client), simply
   * makes it. A `make` that fails lets go of the token, so the same form may be sent again.
   */
  async makeOnce<T extends { record: { number: number | string } }>(
    userId: number,
    token: string | undefined,
    make: () => Promise<T>,
  ): Promise<{ made: T } | { already: string }> {
    if (token === undefined) return { made: await make() };
    const claim = await this.claim(userId, token);
    if (!claim.first) return { already: claim.madeId };
    let made: T;
    try {
      made = await make();
    } catch (error) {
      await this.release(userId, token);
      throw error;
    }
    await this.made(userId, token, made.record.number);
    return { made };
  }

  /** Lets go of a claim whose key or token was not made (its creation failed), so the form can be sent again. */
  async release(userId: number, token: string): Promise<void> {
    await this.store.del(this.claimKey(userId, token)).catch(() => undefined);
  }
}
