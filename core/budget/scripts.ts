import type { ScriptCommands, ScriptReply, StoreScript } from '../store/types.js';
import { counterFields, generationField, generationOfOld } from './leases.js';

/** Why enforcement refused a request, or `admitted`. */
export type EnforcementVerdict =
  /** Admitted: the generation of each counter the reservation was leased on (leases.ts), for its settlement. */
  | { kind: 'admitted'; generations: LeaseGenerations }
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

/** The generations of the key's budget counter, the payer's mirror and each spend group's counter, as one part read them ('' where none). */
export interface LeaseGenerations {
  budget: string;
  wallet: string;
  groups: string[];
}

/**
 * Field of a key's budget hash holding the nano-USD reserved by requests still in flight (already
 * included in the day buckets; the key view shows it as `budget_reserved`). Not a bucket number,
 * so every reader of the buckets skips it.
 */
export const reservedField = 'reserved';

/**
 * A counter hash's counted spend from `minBucket` on, after giving back the reservations whose
 * lease ended unsettled (leases.ts) and deleting buckets that left the window. The memory store's
 * twin of the script's `counted`.
 */
function countedSpend(redis: ScriptCommands, key: string, minBucket: number, nowMinute: number): [number, string] {
  const raw = redis.hgetall(key);
  const { buckets, abandoned, abandonedFields } = counterFields(raw, nowMinute);
  for (const field of abandonedFields) redis.hdel(key, field);
  let sum = 0;
  for (const [bucket, nano] of buckets) {
    if (bucket < minBucket) {
      redis.hdel(key, String(bucket));
      continue;
    }
    const back = abandoned.get(bucket) ?? 0;
    if (back !== 0) redis.hincrBy(key, String(bucket), -back);
    sum += nano - back;
  }
  let released = 0;
  for (const nano of abandoned.values()) released += nano;
  if (released !== 0) redis.hincrBy(key, reservedField, -released);
  return [sum, raw[generationField] ?? generationOfOld];
}

/** Gives back to a wallet mirror the reservations whose lease ended unsettled; returns how much, and the mirror's generation. */
function reclaimedFunds(redis: ScriptCommands, mirror: string, leases: string, nowMinute: number): [number, string] {
  const raw = redis.hgetall(leases);
  const { abandoned, abandonedFields } = counterFields(raw, nowMinute);
  for (const field of abandonedFields) redis.hdel(leases, field);
  let back = 0;
  for (const nano of abandoned.values()) back += nano;
  if (back !== 0) redis.incrBy(mirror, back);
  return [back, raw[generationField] ?? generationOfOld];
}

/** Takes a settled reservation back from its lease field; false when the lease had ended and was given back already. */
function endLease(redis: ScriptCommands, key: string, field: string, reserve: number): boolean {
  if (redis.hget(key, field) === null) return false;
  if (redis.hincrBy(key, field, -reserve) <= 0) redis.hdel(key, field);
  return true;
}

/**
 * Lua of the lease handling both scripts share (leases.ts). `counted` is countedSpend above;
 * `reclaimFunds` is reclaimedFunds; `endLease` is endLease. Numbers reach Lua as doubles: exact
 * for integers to 2^53 nano-USD.
 */
const leaseLua = `
local function counted(key, minBucket, nowMinute)
  local flat = redis.call('HGETALL', key)
  local buckets, abandoned, released, generation = {}, {}, 0, '${generationOfOld}'
  for i = 1, #flat, 2 do
    local field = flat[i]
    if field == '${generationField}' then
      generation = flat[i + 1]
    elseif string.match(field, '^%d+$') then
      local bucket = tonumber(field)
      if bucket < minBucket then redis.call('HDEL', key, field) else buckets[field] = tonumber(flat[i + 1]) end
    else
      local value = tonumber(flat[i + 1])
      local ends, bucket = string.match(field, '^lease:(%d+):(%d+):%w+:%w+$')
      if ends and tonumber(ends) < nowMinute then
        redis.call('HDEL', key, field)
        abandoned[bucket] = (abandoned[bucket] or 0) + value
        released = released + value
      end
    end
  end
  if released ~= 0 then redis.call('HINCRBY', key, '${reservedField}', -released) end
  local used = 0
  for field, value in pairs(buckets) do
    local back = abandoned[field]
    if back then
      redis.call('HINCRBY', key, field, -back)
      value = value - back
    end
    used = used + value
  end
  return used, generation
end
local function reclaimFunds(mirror, leases, nowMinute)
  local flat = redis.call('HGETALL', leases)
  local back, generation = 0, '${generationOfOld}'
  for i = 1, #flat, 2 do
    if flat[i] == '${generationField}' then generation = flat[i + 1] end
    local ends = string.match(flat[i], '^lease:(%d+):%d+:%w+:%w+$')
    if ends and tonumber(ends) < nowMinute then
      redis.call('HDEL', leases, flat[i])
      back = back + tonumber(flat[i + 1])
    end
  end
  if back ~= 0 then redis.call('INCRBY', mirror, back) end
  return back, generation
end
local function endLease(key, field, reserve)
  if redis.call('HEXISTS', key, field) == 0 then return false end
  if redis.call('HINCRBY', key, field, -reserve) <= 0 then redis.call('HDEL', key, field) end
  return true
end
`;

/**
 * The per-request enforcement step, atomic in one store round trip (docs/architecture.md
 * §The request hot path, step 4): rate limit (sliding window), budget reservation of the worst-case cost, and the payer's wallet
 * reservation, each reservation under a lease (leases.ts). Nothing is written for a refused
 * request, except that ended leases it read are given back.
 *
 * KEYS: rate window zset, budget hash, wallet balance, wallet leases hash, then per spend group
 *       its spend hash and cap.
 * ARGV: rpm (0 = none), windowMs, member, reserveNano, capNano (-1 = none), minBucket,
 *       bucket, budgetTtlMs, walletEnforced (0/1), groupCount, creditNano (how far below zero
 *       the payer's wallet may go), the current minute, the minute this reservation's lease
 *       ends, the lease's holder (this gateway), then per spend group its counter's ttl.
 * A spend group's counter is monthly (bucket 0) and counted whether or not it has a cap.
 * Money is integer nano-USD: Lua and JavaScript agree on integers, not on floats (exactly up to
 * 2^53 nano-dollars, about 9 million USD, per counter).
 */
export const enforceRequest: StoreScript<EnforcementVerdict> = {
  name: 'enforce_request',
  lua: `${leaseLua}
local rpm = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local reserve = tonumber(ARGV[4])
local cap = tonumber(ARGV[5])
local minBucket = tonumber(ARGV[6])
local groups = tonumber(ARGV[10])
local nowMinute = tonumber(ARGV[12])
local function lease(bucket, generation) return 'lease:' .. ARGV[13] .. ':' .. bucket .. ':' .. ARGV[14] .. ':' .. generation end
local budgetGeneration, walletGeneration, groupGenerations = '', '', {}
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
  local used
  used, budgetGeneration = counted(KEYS[2], minBucket, nowMinute)
  if used + reserve > cap then return {2, used} end
end
for g = 1, groups do
  local groupCap = redis.call('GET', KEYS[4 + 2 * g])
  if (not groupCap) or redis.call('EXISTS', KEYS[3 + 2 * g]) == 0 then return {7, 0, 0, g - 1} end
  groupCap = tonumber(groupCap)
  local groupUsed
  groupUsed, groupGenerations[g] = counted(KEYS[3 + 2 * g], 0, nowMinute)
  if groupCap >= 0 and groupUsed + reserve > groupCap then return {6, groupUsed, groupCap, g - 1} end
end
if ARGV[9] == '1' then
  local balance = redis.call('GET', KEYS[3])
  if not balance then return {4, 0} end
  local back
  back, walletGeneration = reclaimFunds(KEYS[3], KEYS[4], nowMinute)
  balance = tonumber(balance) + back
  if balance + tonumber(ARGV[11]) < reserve then return {3, balance} end
  redis.call('DECRBY', KEYS[3], reserve)
  if reserve > 0 then redis.call('HINCRBY', KEYS[4], lease('0', walletGeneration), reserve) end
end
if rpm > 0 then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], window)
end
if cap >= 0 then
  redis.call('HINCRBY', KEYS[2], ARGV[7], reserve)
  if reserve > 0 then
    redis.call('HINCRBY', KEYS[2], '${reservedField}', reserve)
    redis.call('HINCRBY', KEYS[2], lease(ARGV[7], budgetGeneration), reserve)
  end
  redis.call('PEXPIRE', KEYS[2], ARGV[8])
end
for g = 1, groups do
  redis.call('HINCRBY', KEYS[3 + 2 * g], '0', reserve)
  if reserve > 0 then
    redis.call('HINCRBY', KEYS[3 + 2 * g], '${reservedField}', reserve)
    redis.call('HINCRBY', KEYS[3 + 2 * g], lease('0', groupGenerations[g]), reserve)
  end
  redis.call('PEXPIRE', KEYS[3 + 2 * g], ARGV[14 + g])
end
local admitted = {0, 0, budgetGeneration, walletGeneration}
for g = 1, groups do admitted[4 + g] = groupGenerations[g] end
return admitted
`,
  memory(redis, keys, args) {
    const [rateKey, budgetKey, walletKey, walletLeases] = keys as [string, string, string, string];
    const groups = Number(args[9]);
    const counterOf = (g: number) => keys[4 + 2 * g]!;
    const capOf = (g: number) => keys[5 + 2 * g]!;
    const rpm = Number(args[0]);
    const window = Number(args[1]);
    const reserve = Number(args[3]);
    const cap = Number(args[4]);
    const nowMinute = Number(args[11]);
    const lease = (bucket: string, generation: string) => `lease:${args[12]}:${bucket}:${args[13]}:${generation}`;
    const generations: LeaseGenerations = { budget: '', wallet: '', groups: [] };
    const now = redis.nowMs();
    if (rpm > 0) {
      redis.zremRangeByScore(rateKey, -Infinity, now - window);
      if (redis.zcard(rateKey) >= rpm) return [1, redis.zfirst(rateKey)![1] + window - now];
    }
    if (cap >= 0) {
      if (redis.pttl(budgetKey) === -2) return [5, 0];
      const [used, generation] = countedSpend(redis, budgetKey, Number(args[5]), nowMinute);
      generations.budget = generation;
      if (used + reserve > cap) return [2, used];
    }
    for (let g = 0; g < groups; g++) {
      const groupCap = redis.get(capOf(g));
      if (groupCap === null || redis.pttl(counterOf(g)) === -2) return [7, 0, 0, g];
      const [groupUsed, generation] = countedSpend(redis, counterOf(g), 0, nowMinute);
      generations.groups.push(generation);
      if (Number(groupCap) >= 0 && groupUsed + reserve > Number(groupCap)) return [6, groupUsed, Number(groupCap), g];
    }
    if (args[8] === '1') {
      const mirrored = redis.get(walletKey);
      if (mirrored === null) return [4, 0];
      const [back, generation] = reclaimedFunds(redis, walletKey, walletLeases, nowMinute);
      generations.wallet = generation;
      const balance = Number(mirrored) + back;
      if (balance + Number(args[10]) < reserve) return [3, balance];
      redis.incrBy(walletKey, -reserve);
      if (reserve > 0) redis.hincrBy(walletLeases, lease('0', generation), reserve);
    }
    if (rpm > 0) {
      redis.zadd(rateKey, now, args[2]!);
      redis.pexpire(rateKey, window);
    }
    if (cap >= 0) {
      redis.hincrBy(budgetKey, args[6]!, reserve);
      if (reserve > 0) {
        redis.hincrBy(budgetKey, reservedField, reserve);
        redis.hincrBy(budgetKey, lease(args[6]!, generations.budget), reserve);
      }
      redis.pexpire(budgetKey, Number(args[7]));
    }
    for (let g = 0; g < groups; g++) {
      redis.hincrBy(counterOf(g), '0', reserve);
      if (reserve > 0) {
        redis.hincrBy(counterOf(g), reservedField, reserve);
        redis.hincrBy(counterOf(g), lease('0', generations.groups[g]!), reserve);
      }
      redis.pexpire(counterOf(g), Number(args[14 + g]));
    }
    return [0, 0, generations.budget, generations.wallet, ...generations.groups];
  },
  decode(reply: ScriptReply): EnforcementVerdict {
    const [kind, value, extra, group] = reply as [number, number, number?, number?];
    switch (kind) {
      case 0: {
        const [, , budget, wallet, ...groups] = reply as [number, number, string, string, ...string[]];
        return {
          kind: 'admitted',
          generations: { budget: String(budget ?? ''), wallet: String(wallet ?? ''), groups: groups.map(String) },
        };
      }
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
 * Settles a reservation once the actual cost is known (or releases it, with actual = 0), exactly
 * once per request: the marker makes a settlement retried after a lost reply (or resent by the
 * client library on reconnection) change nothing twice. On each counter, and on the wallet, the
 * reservation is taken back from its lease: while the lease holds it, what was reserved and not
 * spent goes back; once its lease has ended (given back already: leases.ts), only the actual cost
 * is charged. A counter or mirror the store lost is left alone: its rebuild counts the request
 * from PostgreSQL.
 * KEYS: budget hash, wallet balance, settlement marker, wallet leases hash, then each spend
 * group's spend hash, then (with a member) the rate window.
 * ARGV: bucket, reserveNano, actualNano, budgeted (0/1), walletEnforced (0/1), marker ttl ms,
 * groupCount, the budget's lease field, the wallet's, each spend group's, then the rate member to
 * remove (absent = none: a withdrawal on a sharded store, where another shard refused the
 * request after this one admitted it, takes back the request's place in the rate window too).
 */
export const settleReservation: StoreScript<void> = {
  name: 'settle_reservation',
  lua: `${leaseLua}
if redis.call('SET', KEYS[3], '1', 'NX', 'PX', ARGV[6]) == false then return 0 end
local reserve = tonumber(ARGV[2])
local actual = tonumber(ARGV[3])
local unspent = reserve - actual
local function settleCounter(key, bucket, lease)
  if redis.call('EXISTS', key) == 0 then return end
  if endLease(key, lease, reserve) then
    if unspent ~= 0 then redis.call('HINCRBY', key, bucket, -unspent) end
    redis.call('HINCRBY', key, '${reservedField}', -reserve)
  elseif actual ~= 0 then
    redis.call('HINCRBY', key, bucket, actual)
  end
end
if ARGV[4] == '1' then settleCounter(KEYS[1], ARGV[1], ARGV[8]) end
if ARGV[5] == '1' then
  local leased = endLease(KEYS[4], ARGV[9], reserve)
  if redis.call('EXISTS', KEYS[2]) == 1 then
    if leased then
      if unspent ~= 0 then redis.call('INCRBY', KEYS[2], unspent) end
    elseif actual ~= 0 then
      redis.call('DECRBY', KEYS[2], actual)
    end
  end
end
local groups = tonumber(ARGV[7])
for g = 1, groups do settleCounter(KEYS[4 + g], '0', ARGV[9 + g]) end
if ARGV[10 + groups] then redis.call('ZREM', KEYS[5 + groups], ARGV[10 + groups]) end
return 0
`,
  memory(redis, keys, args) {
    const [budgetKey, walletKey, marker, walletLeases] = keys as [string, string, string, string];
    if (redis.get(marker) !== null) return 0;
    redis.set(marker, '1', Number(args[5]));
    const reserve = Number(args[1]);
    const actual = Number(args[2]);
    const unspent = reserve - actual;
    const settleCounter = (key: string, bucket: string, lease: string) => {
      if (redis.pttl(key) === -2) return;
      if (endLease(redis, key, lease, reserve)) {
        if (unspent !== 0) redis.hincrBy(key, bucket, -unspent);
        redis.hincrBy(key, reservedField, -reserve);
      } else if (actual !== 0) redis.hincrBy(key, bucket, actual);
    };
    if (args[3] === '1') settleCounter(budgetKey, args[0]!, args[7]!);
    if (args[4] === '1') {
      const leased = endLease(redis, walletLeases, args[8]!, reserve);
      if (redis.get(walletKey) !== null) {
        if (leased) {
          if (unspent !== 0) redis.incrBy(walletKey, unspent);
        } else if (actual !== 0) redis.incrBy(walletKey, -actual);
      }
    }
    const groups = Number(args[6]);
    for (let g = 0; g < groups; g++) settleCounter(keys[4 + g]!, '0', args[9 + g]!);
    if (args[9 + groups] !== undefined) redis.zrem(keys[4 + groups]!, args[9 + groups]!);
    return 0;
  },
  decode: () => undefined,
};
