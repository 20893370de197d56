// A key's rate limit in the store: a sliding one-minute window of request members (a sorted set
// scored by arrival time), written by the enforcement script (scripts.ts). Its name and length
// live here so the portal's operations view reads the same window the gateway enforces.
import { shardTag } from '../store/shard-tags.js';
import type { StoreScript } from '../store/types.js';

/** Length of the `rate_limit_rpm` window. */
export const rateWindowMs = 60_000;

/** Store key of a key's rate window. */
export function rateWindowKey(keyId: string): string {
  return `rate:${shardTag(keyId)}`;
}

/** The window now: requests counted in it, when the oldest leaves it, and the store's clock. */
export interface RateWindowState {
  counted: number;
  /** Epoch ms the oldest counted request leaves the window; null when none is counted. */
  oldestLeavesAtMs: number | null;
  nowMs: number;
}

/**
 * Reads a rate window (dropping members that already left it, as enforcement does), by the
 * store's clock. KEYS: window. ARGV: window ms.
 */
export const readRateWindow: StoreScript<RateWindowState> = {
  name: 'read_rate_window',
  lua: `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[1]))
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local at = -1
if oldest[2] then at = tonumber(oldest[2]) + tonumber(ARGV[1]) end
return {redis.call('ZCARD', KEYS[1]), at, now}
`,
  memory(redis, keys, args) {
    const now = redis.nowMs();
    const window = Number(args[0]);
    redis.zremRangeByScore(keys[0]!, -Infinity, now - window);
    const oldest = redis.zfirst(keys[0]!);
    return [redis.zcard(keys[0]!), oldest ? oldest[1] + window : -1, now];
  },
  decode(reply) {
    const [counted, at, now] = (reply as number[]).map(Number) as [number, number, number];
    return { counted, oldestLeavesAtMs: at < 0 ? null : at, nowMs: now };
  },
};
