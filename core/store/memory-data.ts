import type { ScriptCommands } from './types.js';

type Value =
  { type: 'string'; value: string } | { type: 'hash'; value: Map<string, string> } | { type: 'zset'; value: Map<string, number> };

interface Slot {
  data: Value;
  expiresAt: number | undefined;
}

/** Thrown like Redis's WRONGTYPE when a command meets a key holding another type. */
export class WrongTypeError extends Error {
  constructor(key: string) {
    super(`WRONGTYPE Operation against a key holding the wrong kind of value (${key})`);
  }
}

/** Redis formats floats without trailing zeros; keep the replies of both stores identical. */
function formatFloat(n: number): string {
  return Number.isInteger(n) ? String(n) : String(Number(n.toPrecision(17)));
}

/**
 * The in-process data model behind the memory store: strings, hashes and sorted sets with
 * millisecond expiry, speaking the same commands as Redis. JavaScript runs one call at a time,
 * so a script body executed here is atomic, as a Lua script is in Redis.
 */
export class MemoryData implements ScriptCommands {
  private readonly slots = new Map<string, Slot>();

  constructor(private readonly clock: () => number = Date.now) {}

  /** Forgets every value. */
  clear(): void {
    this.slots.clear();
  }

  nowMs(): number {
    return this.clock();
  }

  private slot(key: string): Slot | undefined {
    const slot = this.slots.get(key);
    if (slot && slot.expiresAt !== undefined && slot.expiresAt <= this.clock()) {
      this.slots.delete(key);
      return undefined;
    }
    return slot;
  }

  private typed<T extends Value['type']>(key: string, type: T): Extract<Value, { type: T }> | undefined {
    const slot = this.slot(key);
    if (!slot) return undefined;
    if (slot.data.type !== type) throw new WrongTypeError(key);
    return slot.data as Extract<Value, { type: T }>;
  }

  private create<V extends Value>(key: string, data: V): V {
    this.slots.set(key, { data, expiresAt: undefined });
    return data;
  }

  /** Drops expired keys; called periodically so idle counters do not pile up. */
  sweep(): void {
    const now = this.clock();
    for (const [key, slot] of this.slots) if (slot.expiresAt !== undefined && slot.expiresAt <= now) this.slots.delete(key);
  }

  get(key: string): string | null {
    return this.typed(key, 'string')?.value ?? null;
  }

  set(key: string, value: string, pxMs?: number): void {
    this.slots.set(key, { data: { type: 'string', value }, expiresAt: pxMs === undefined ? undefined : this.clock() + pxMs });
  }

  del(key: string): number {
    return this.slot(key) && this.slots.delete(key) ? 1 : 0;
  }

  incrBy(key: string, by: number): number {
    const current = this.typed(key, 'string');
    const base = current ? Number(current.value) : 0;
    if (!Number.isInteger(base)) throw new Error('ERR value is not an integer or out of range');
    const next = base + by;
    if (current) current.value = String(next);
    else this.create(key, { type: 'string', value: String(next) });
    return next;
  }

  incrByFloat(key: string, by: number): string {
    const current = this.typed(key, 'string');
    const next = formatFloat((current ? Number(current.value) : 0) + by);
    if (current) current.value = next;
    else this.create(key, { type: 'string', value: next });
    return next;
  }

  pexpire(key: string, ms: number): number {
    const slot = this.slot(key);
    if (!slot) return 0;
    slot.expiresAt = this.clock() + ms;
    return 1;
  }

  pttl(key: string): number {
    const slot = this.slot(key);
    if (!slot) return -2;
    return slot.expiresAt === undefined ? -1 : slot.expiresAt - this.clock();
  }

  hget(key: string, field: string): string | null {
    return this.typed(key, 'hash')?.value.get(field) ?? null;
  }

  hset(key: string, field: string, value: string): number {
    const hash = this.typed(key, 'hash') ?? this.create(key, { type: 'hash', value: new Map() });
    const added = hash.value.has(field) ? 0 : 1;
    hash.value.set(field, value);
    return added;
  }

  hincrBy(key: string, field: string, by: number): number {
    const hash = this.typed(key, 'hash') ?? this.create(key, { type: 'hash', value: new Map() });
    const base = Number(hash.value.get(field) ?? 0);
    if (!Number.isInteger(base)) throw new Error('ERR hash value is not an integer');
    const next = base + by;
    hash.value.set(field, String(next));
    return next;
  }

  hdel(key: string, field: string): number {
    const hash = this.typed(key, 'hash');
    if (!hash || !hash.value.delete(field)) return 0;
    if (hash.value.size === 0) this.slots.delete(key);
    return 1;
  }

  hincrByFloat(key: string, field: string, by: number): string {
    const hash = this.typed(key, 'hash') ?? this.create(key, { type: 'hash', value: new Map() });
    const next = formatFloat(Number(hash.value.get(field) ?? 0) + by);
    hash.value.set(field, next);
    return next;
  }

  hgetall(key: string): Record<string, string> {
    return Object.fromEntries(this.typed(key, 'hash')?.value ?? []);
  }

  zadd(key: string, score: number, member: string): number {
    const zset = this.typed(key, 'zset') ?? this.create(key, { type: 'zset', value: new Map() });
    const added = zset.value.has(member) ? 0 : 1;
    zset.value.set(member, score);
    return added;
  }

  zremRangeByScore(key: string, min: number, max: number): number {
    const zset = this.typed(key, 'zset');
    if (!zset) return 0;
    let removed = 0;
    for (const [member, score] of zset.value) {
      if (score >= min && score <= max) {
        zset.value.delete(member);
        removed++;
      }
    }
    if (zset.value.size === 0) this.slots.delete(key);
    return removed;
  }

  zrem(key: string, member: string): number {
    const zset = this.typed(key, 'zset');
    if (!zset || !zset.value.delete(member)) return 0;
    if (zset.value.size === 0) this.slots.delete(key);
    return 1;
  }

  zcard(key: string): number {
    return this.typed(key, 'zset')?.value.size ?? 0;
  }

  zfirst(key: string): [string, number] | null {
    const zset = this.typed(key, 'zset');
    if (!zset || zset.value.size === 0) return null;
    let best: [string, number] | null = null;
    for (const [member, score] of zset.value) {
      if (!best || score < best[1] || (score === best[1] && member < best[0])) best = [member, score];
    }
    return best;
  }
}
