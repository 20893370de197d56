import type { ScriptCommands, ScriptReply, StoreScript } from '../store/types.js';

/** Why enforcement refused a request, or `admitted`. */
export type EnforcementVerdict =
  | { kind: 'admitted' }
  | { kind: 'rate_limited'; retryAfterMs: number }
  | { kind: 'budget_exceeded'; usedNano: number }
  /** A spend group's monthly budget (core/budget/spend-groups.ts) cannot take this reservation; `group` is its index in KEYS order. */
  | { kind: 'group_budget_exceeded'; group: number; usedNano: number; capNano: number }
  /** A spend group's counter or cap is not in the store: rebuild both, ask again. */
  | { kind: 'group_budget_unknown'; group: number }
  | { kind: 'wallet_empty'; balanceNano: number }
  /** The payer's balance is not in the store yet: load it from PostgreSQL and ask again. */
  | { kind: 'wallet_unknown' }
  /**
   * The key's budget counter is not in the store (a new period, or a store that lost its data):
   * rebuild it from PostgreSQL and ask again — a missing counter never reads as "nothing spent".
   */
  | { kind: 'budget_unknown' };

/**
 * Field of a key's budget hash holding the nano-USD reserved by requests still in flight (already
 * included in the day buckets; the key view shows it as `budget_reserved`). Not a bucket number,
 * so every reader of the buckets skips it.
 */
export const reservedField = 'reserved';

/** Sums the counted buckets of a budget hash, deleting buckets that left the window. */
function countedSpend(redis: ScriptCommands, key: string, minBucket: number): number {
  let sum = 0;
  for (const [field, value] of Object.entries(redis.hgetall(key))) {
    if (field === reservedField) continue;
    if (Number(field) < minBucket) redis.hdel(key, field);
    else sum += Number(value);
  }
  return sum;
}

/**
 * The per-request enforcement step, atomic in one store round trip (docs/architecture.md
 * §The request hot path, step 4): rate limit (sliding window), budget reservation of the worst-case cost, and the payer's wallet
 * reservation. Nothing is written unless everything passes, so a refusal costs nothing.
 *
 * KEYS: rate window zset, budget hash, wallet balance, then per spend group its spend hash and cap.
 * ARGV: rpm (0 = none), windowMs, member, reserveNano, capNano (-1 = none), minBucket,
 *       bucket, budgetTtlMs, walletEnforced (0/1), groupCount (absent = 0), creditNano (how far
 *       below zero the payer's wallet may go; absent = 0), then per spend group its counter's ttl.
 * A spend group's counter is monthly (bucket 0) and counted whether or not it has a cap.
 * Money is integer nano-USD: Lua and JavaScript agree on integers, not on floats (exactly up to
 * 2^53 nano-dollars, about 9 million USD, per counter).
 */
export const enforceRequest: StoreScript<EnforcementVerdict> = {
  name: 'enforce_request',
  lua: `
local rpm = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local reserve = tonumber(ARGV[4])
local cap = tonumber(ARGV[5])
local minBucket = tonumber(ARGV[6])
local now = 0
if rpm > 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
  if redis.call('ZCARD', KEYS[1]) >= rpm then
    local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
    return {1, tonumber(oldest[2]) + window - now}
  end
end
if cap >= 0 then
  if redis.call('EXISTS', KEYS[2]) == 0 then return {5, 0} end
  local used = 0
  local flat = redis.call('HGETALL', KEYS[2])
  for i = 1, #flat, 2 do
    local bucket = tonumber(flat[i])
    if bucket == nil then
      -- the in-flight total ('${reservedField}'): already inside the day buckets, not counted twice
    elseif bucket < minBucket then redis.call('HDEL', KEYS[2], flat[i])
    else used = used + tonumber(flat[i + 1]) end
  end
  if used + reserve > cap then return {2, used} end
end
local groups = tonumber(ARGV[10] or '0')
for g = 1, groups do
  local groupCap = redis.call('GET', KEYS[3 + 2 * g])
  if (not groupCap) or redis.call('EXISTS', KEYS[2 + 2 * g]) == 0 then return {7, 0, 0, g - 1} end
  groupCap = tonumber(groupCap)
  if groupCap >= 0 then
    local groupUsed = tonumber(redis.call('HGET', KEYS[2 + 2 * g], '0') or '0')
    if groupUsed + reserve > groupCap then return {6, groupUsed, groupCap, g - 1} end
  end
end
if ARGV[9] == '1' then
  local balance = redis.call('GET', KEYS[3])
  if not balance then return {4, 0} end
  if tonumber(balance) + tonumber(ARGV[11] or '0') < reserve then return {3, tonumber(balance)} end
  redis.call('DECRBY', KEYS[3], reserve)
end
if rpm > 0 then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], window)
end
if cap >= 0 then
  redis.call('HINCRBY', KEYS[2], ARGV[7], reserve)
  redis.call('HINCRBY', KEYS[2], '${reservedField}', reserve)
  redis.call('PEXPIRE', KEYS[2], ARGV[8])
end
for g = 1, groups do
  redis.call('HINCRBY', KEYS[2 + 2 * g], '0', reserve)
  redis.call('HINCRBY', KEYS[2 + 2 * g], '${reservedField}', reserve)
  redis.call('PEXPIRE', KEYS[2 + 2 * g], ARGV[11 + g])
end
return {0, 0}
`,
  memory(redis, keys, args) {
    const [rateKey, budgetKey, walletKey] = keys as [string, string, string];
    const groups = Number(args[9] ?? 0);
    const counterOf = (g: number) => keys[3 + 2 * g]!;
    const rpm = Number(args[0]);
    const window = Number(args[1]);
    const reserve = Number(args[3]);
    const cap = Number(args[4]);
    const now = redis.nowMs();
    if (rpm > 0) {
      redis.zremRangeByScore(rateKey, -Infinity, now - window);
      if (redis.zcard(rateKey) >= rpm) return [1, redis.zfirst(rateKey)![1] + window - now];
    }
    if (cap >= 0) {
      if (redis.pttl(budgetKey) === -2) return [5, 0];
      const used = countedSpend(redis, budgetKey, Number(args[5]));
      if (used + reserve > cap) return [2, used];
    }
    for (let g = 0; g < groups; g++) {
      const groupCap = redis.get(keys[4 + 2 * g]!);
      if (groupCap === null || redis.pttl(counterOf(g)) === -2) return [7, 0, 0, g];
      const groupUsed = Number(redis.hget(counterOf(g), '0') ?? 0);
      if (Number(groupCap) >= 0 && groupUsed + reserve > Number(groupCap)) return [6, groupUsed, Number(groupCap), g];
    }
    if (args[8] === '1') {
      const balance = redis.get(walletKey);
      if (balance === null) return [4, 0];
      if (Number(balance) + Number(args[10] ?? 0) < reserve) return [3, Number(balance)];
      redis.incrBy(walletKey, -reserve);
    }
    if (rpm > 0) {
      redis.zadd(rateKey, now, args[2]!);
      redis.pexpire(rateKey, window);
    }
    if (cap >= 0) {
      redis.hincrBy(budgetKey, args[6]!, reserve);
      redis.hincrBy(budgetKey, reservedField, reserve);
      redis.pexpire(budgetKey, Number(args[7]));
    }
    for (let g = 0; g < groups; g++) {
      redis.hincrBy(counterOf(g), '0', reserve);
      redis.hincrBy(counterOf(g), reservedField, reserve);
      redis.pexpire(counterOf(g), Number(args[11 + g]));
    }
    return [0, 0];
  },
  decode(reply: ScriptReply): EnforcementVerdict {
    const [kind, value, extra, group] = reply as [number, number, number?, number?];
    switch (kind) {
      case 0:
        return { kind: 'admitted' };
      case 1:
        return { kind: 'rate_limited', retryAfterMs: Math.max(0, value) };
      case 2:
        return { kind: 'budget_exceeded', usedNano: value };
      case 3:
        return { kind: 'wallet_empty', balanceNano: value };
      case 4:
        return { kind: 'wallet_unknown' };
      case 5:
        return { kind: 'budget_unknown' };
      case 6:
        return { kind: 'group_budget_exceeded', group: group ?? 0, usedNano: value, capNano: extra ?? 0 };
      case 7:
        return { kind: 'group_budget_unknown', group: group ?? 0 };
      default:
        throw new Error(`enforce_request returned unknown verdict ${String(kind)}`);
    }
  },
};

/**
 * Settles a reservation once the actual cost is known (or releases it, with actual = 0): the
 * budget bucket and the wallet get back what was reserved and not spent. Exactly once per
 * request: the marker makes a settlement retried after a lost reply (or resent by the client
 * library on reconnection) change nothing twice. A counter or mirror the store lost is left
 * alone: its rebuild counts the request from PostgreSQL.
 * KEYS: budget hash, wallet balance, settlement marker, then each spend group's spend hash,
 * then (with a member) the rate window.
 * ARGV: bucket, reserveNano, actualNano, budgeted (0/1), walletEnforced (0/1), marker ttl ms,
 * groupCount (absent = 0), rate member to remove (absent = none: a withdrawal on a sharded
 * store, where another shard refused the request after this one admitted it, takes back the
 * request's place in the rate window too).
 */
export const settleReservation: StoreScript<void> = {
  name: 'settle_reservation',
  lua: `
if redis.call('SET', KEYS[3], '1', 'NX', 'PX', ARGV[6]) == false then return 0 end
local unspent = tonumber(ARGV[2]) - tonumber(ARGV[3])
if ARGV[4] == '1' and redis.call('EXISTS', KEYS[1]) == 1 then
  if unspent ~= 0 then redis.call('HINCRBY', KEYS[1], ARGV[1], -unspent) end
  redis.call('HINCRBY', KEYS[1], '${reservedField}', -tonumber(ARGV[2]))
end
if ARGV[5] == '1' and unspent ~= 0 and redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('INCRBY', KEYS[2], unspent)
end
local groups = tonumber(ARGV[7] or '0')
for g = 1, groups do
  if redis.call('EXISTS', KEYS[3 + g]) == 1 then
    if unspent ~= 0 then redis.call('HINCRBY', KEYS[3 + g], '0', -unspent) end
    redis.call('HINCRBY', KEYS[3 + g], '${reservedField}', -tonumber(ARGV[2]))
  end
end
if ARGV[8] then redis.call('ZREM', KEYS[4 + groups], ARGV[8]) end
return 0
`,
  memory(redis, keys, args) {
    const [budgetKey, walletKey, marker] = keys as [string, string, string];
    if (redis.get(marker) !== null) return 0;
    redis.set(marker, '1', Number(args[5]));
    const unspent = Number(args[1]) - Number(args[2]);
    if (args[3] === '1' && redis.pttl(budgetKey) !== -2) {
      if (unspent !== 0) redis.hincrBy(budgetKey, args[0]!, -unspent);
      redis.hincrBy(budgetKey, reservedField, -Number(args[1]));
    }
    if (args[4] === '1' && unspent !== 0 && redis.get(walletKey) !== null) redis.incrBy(walletKey, unspent);
    const groups = Number(args[6] ?? 0);
    for (let g = 0; g < groups; g++) {
      const counter = keys[3 + g]!;
      if (redis.pttl(counter) === -2) continue;
      if (unspent !== 0) redis.hincrBy(counter, '0', -unspent);
      redis.hincrBy(counter, reservedField, -Number(args[1]));
    }
    if (args[7] !== undefined) redis.zrem(keys[3 + groups]!, args[7]);
    return 0;
  },
  decode: () => undefined,
};
