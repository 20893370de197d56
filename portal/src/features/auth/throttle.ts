// Sign-in throttling shared by every portal replica through the store: failed attempts are
// counted per account (by a hash of the lowercased email, whether or not it exists) and per
// client address within a window; past either limit, sign-in is refused with 429 until the
// window ends. Unknown and known addresses are counted alike, so the answer reveals nothing.
import { createHmac } from 'node:crypto';
import { ApiError } from '../../../../core/errors/index.js';
import type { Store, StoreScript } from '../../../../core/store/index.js';

/** An address as a counter's name: keyed (the pepper), so the store never holds the addresses themselves. */
function emailDigest(pepper: string, email: string): string {
  return createHmac('sha256', pepper).update(email.trim().toLowerCase()).digest('hex').slice(0, 32);
}

/**
 * Takes one attempt back off a counter, only while the counter holds it: a counter that expired
 * between an attempt's count and its un-count is not recreated at -1 (which would allow one
 * extra guess in the next window). KEYS: counter. Replies the count left (0 when there was none).
 */
export const uncountAttempt: StoreScript<number> = {
  name: 'login_throttle_uncount',
  lua: `local n = tonumber(redis.call('GET', KEYS[1]) or '0')
if n <= 0 then return 0 end
return redis.call('INCRBY', KEYS[1], -1)`,
  memory(redis, keys) {
    const n = Number(redis.get(keys[0]!) ?? '0');
    if (n <= 0) return 0;
    return redis.incrBy(keys[0]!, -1);
  },
  decode: (reply) => Number(reply),
};

/** Limits of the throttle. */
export interface ThrottleLimits {
  perAccount: number;
  perAddress: number;
  windowMs: number;
}

/** Counts failed sign-ins and refuses attempts past the limits. */
export class LoginThrottle {
  constructor(
    private readonly store: Store,
    private readonly pepper: string,
    private readonly limits: ThrottleLimits,
  ) {}

  private keys(email: string, address: string): { account: string; address: string } {
    return { account: `portal:login-fail:account:${emailDigest(this.pepper, email)}`, address: `portal:login-fail:address:${address}` };
  }

  /**
   * Counts an attempt against both counters before its password is checked, and throws 429
   * rate_limit_exceeded (with Retry-After) when either is past its limit. Counting first is what
   * bounds a burst: checking, hashing, then counting let 30 concurrent guesses all pass a check
   * that saw none of them. A correct password is un-counted by `succeeded`.
   */
  async begin(email: string, address: string): Promise<void> {
    const keys = this.keys(email, address);
    const [account, byAddress] = await Promise.all([
      this.store.incrBy(keys.account, 1, this.limits.windowMs),
      this.store.incrBy(keys.address, 1, this.limits.windowMs),
    ]);
    const blocked = account > this.limits.perAccount ? keys.account : byAddress > this.limits.perAddress ? keys.address : undefined;
    if (!blocked) return;
    // A refused attempt checked no password: it is not a failure to count (nor does it lengthen the wait).
    const [ttl] = await Promise.all([this.store.pttl(blocked), this.uncount(keys.account), this.uncount(keys.address)]);
    throw new ApiError('rate_limit_exceeded', {
      humanMessage: 'Too many failed sign-in attempts; wait a few minutes before trying again',
      retryAfterSeconds: Math.max(1, Math.ceil((ttl > 0 ? ttl : this.limits.windowMs) / 1000)),
    });
  }

  /** The password was right: the account's failures are forgiven, and this attempt is not the address's failure. */
  async succeeded(email: string, address: string): Promise<void> {
    const keys = this.keys(email, address);
    await Promise.all([this.store.del(keys.account), this.uncount(keys.address)]);
  }

  private uncount(key: string): Promise<number> {
    return this.store.runScript(uncountAttempt, [key], []);
  }
}

/** Limits of the emails an unauthenticated request can make the portal send. */
export interface EmailLimits {
  /** Emails of one kind to one address asked for from one client address, in a window. */
  perRecipient: number;
  /** Such requests from one client address in a window, whatever the recipient. */
  perClient: number;
  windowMs: number;
}

/** How many clients' worth of emails one address may be sent in a window, all clients together. */
export const recipientClientsFactor = 4;

/**
 * Bounds the emails anyone can make the portal send without signing in (sign-up, password reset,
 * a new verification link): per recipient and client address, so one client cannot flood an
 * inbox nor keep its owner's own reset from getting through (that client's counter is its own);
 * per recipient from every client together (`recipientClientsFactor` × that), so a flood from
 * many addresses stays bounded too; and per client address, so one client cannot spread a flood
 * over many recipients. Every request counts, whether or not the address has an account, so a
 * refusal reveals nothing about which addresses exist.
 */
export class EmailRequestThrottle {
  constructor(
    private readonly store: Store,
    private readonly pepper: string,
    private readonly limits: EmailLimits,
  ) {}

  /** Counts one request; throws 429 rate_limit_exceeded (with Retry-After) past any limit. */
  async take(kind: 'reset_password' | 'verify_email', email: string, address: string): Promise<void> {
    const recipient = `portal:email-requests:${kind}:recipient:${emailDigest(this.pepper, email)}`;
    const counters = [
      { key: `${recipient}:client:${address}`, limit: this.limits.perRecipient, about: 'recipient' },
      { key: recipient, limit: this.limits.perRecipient * recipientClientsFactor, about: 'recipient' },
      { key: `portal:email-requests:client:${address}`, limit: this.limits.perClient, about: 'client' },
    ] as const;
    const counts = await Promise.all(counters.map((c) => this.store.incrBy(c.key, 1, this.limits.windowMs)));
    const over = counters.find((c, i) => counts[i]! > c.limit);
    if (!over) return;
    const ttl = await this.store.pttl(over.key);
    throw new ApiError('rate_limit_exceeded', {
      humanMessage:
        over.about === 'recipient'
          ? 'Several emails were sent to this address a short while ago; check the inbox (and spam folder), or try again later'
          : 'Too many emails were asked for from this network; try again later',
      retryAfterSeconds: Math.max(1, Math.ceil((ttl > 0 ? ttl : this.limits.windowMs) / 1000)),
    });
  }
}
