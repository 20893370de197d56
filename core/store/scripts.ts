import type { ScriptReply, StoreScript } from './types.js';

/** Result of reserving an amount against a capped counter. */
export interface CapReservation {
  granted: boolean;
  /** The counter after the call (unchanged when refused). */
  total: number;
}

/**
 * Adds `amount` to a counter only if the total stays within `cap`, atomically; the counter
 * expires `ttlMs` after creation. The primitive behind budget reservations: concurrent callers
 * can never push the total past the cap. Amounts are integers (money in micro-USD): float
 * arithmetic differs between Lua/Redis (long double) and JavaScript, integers do not.
 * KEYS[1]=counter; ARGV: amount, cap, ttlMs.
 */
export const reserveUnderCap: StoreScript<CapReservation> = {
  name: 'reserve_under_cap',
  lua: `
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
local amount = tonumber(ARGV[1])
local cap = tonumber(ARGV[2])
if current + amount > cap then
  return {0, current}
end
local total = redis.call('INCRBY', KEYS[1], amount)
if redis.call('PTTL', KEYS[1]) == -1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
end
return {1, total}
`,
  memory(redis, keys, args) {
    const key = keys[0]!;
    const current = Number(redis.get(key) ?? '0');
    const amount = Number(args[0]);
    if (current + amount > Number(args[1])) return [0, current];
    const total = redis.incrBy(key, amount);
    if (redis.pttl(key) === -1) redis.pexpire(key, Number(args[2]));
    return [1, total];
  },
  decode(reply: ScriptReply): CapReservation {
    const [granted, total] = reply as [number, number];
    return { granted: granted === 1, total };
  },
};

/** Result of a sliding-window rate check. */
export interface WindowAdmission {
  allowed: boolean;
  /** Requests counted in the window, including this one when allowed. */
  count: number;
  /** When refused: milliseconds until the oldest request leaves the window. */
  retryAfterMs: number;
}

/**
 * Sliding-window log limiter: admits a request when fewer than `limit` were admitted in the
 * last `windowMs`. KEYS[1]=window zset; ARGV: limit, windowMs, member (unique per request).
 * Time comes from the store's clock so replicas with skewed clocks agree.
 */
export const admitInWindow: StoreScript<WindowAdmission> = {
  name: 'admit_in_window',
  lua: `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])
if count >= limit then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return {0, count, tonumber(oldest[2]) + window - now}
end
redis.call('ZADD', KEYS[1], now, ARGV[3])
redis.call('PEXPIRE', KEYS[1], window)
return {1, count + 1, 0}
`,
  memory(redis, keys, args) {
    const key = keys[0]!;
    const now = redis.nowMs();
    const limit = Number(args[0]);
    const window = Number(args[1]);
    redis.zremRangeByScore(key, -Infinity, now - window);
    const count = redis.zcard(key);
    if (count >= limit) {
      const oldest = redis.zfirst(key);
      return [0, count, (oldest ? oldest[1] : now) + window - now];
    }
    redis.zadd(key, now, args[2]!);
    redis.pexpire(key, window);
    return [1, count + 1, 0];
  },
  decode(reply: ScriptReply): WindowAdmission {
    const [allowed, count, retryAfterMs] = reply as [number, number, number];
    return { allowed: allowed === 1, count, retryAfterMs: Math.max(0, retryAfterMs) };
  },
};
