/** A raw script reply, the shape Redis gives a Lua return value (and the memory store mimics). */
export type ScriptReply = string | number | null | ScriptReply[];

/**
 * The subset of Redis commands that script bodies may use, synchronous, against the
 * in-process data model. A script's Lua and its `memory` body use the same commands so the
 * contract tests can hold them to the same results.
 */
export interface ScriptCommands {
  get(key: string): string | null;
  set(key: string, value: string, pxMs?: number): void;
  del(key: string): number;
  incrBy(key: string, by: number): number;
  incrByFloat(key: string, by: number): string;
  pexpire(key: string, ms: number): number;
  pttl(key: string): number;
  hget(key: string, field: string): string | null;
  hset(key: string, field: string, value: string): number;
  hincrBy(key: string, field: string, by: number): number;
  hincrByFloat(key: string, field: string, by: number): string;
  hdel(key: string, field: string): number;
  hgetall(key: string): Record<string, string>;
  zadd(key: string, score: number, member: string): number;
  zremRangeByScore(key: string, min: number, max: number): number;
  zcard(key: string): number;
  zrem(key: string, member: string): number;
  /** Lowest-scored member and its score, or null when empty (ZRANGE key 0 0 WITHSCORES). */
  zfirst(key: string): [string, number] | null;
  /** Milliseconds since the epoch, as `redis.call('TIME')` gives it. */
  nowMs(): number;
}

/**
 * An atomic script: Lua for Redis and the same logic for the memory store. Keys and args are
 * strings on the wire; `decode` turns the reply into the caller's type.
 */
export interface StoreScript<Result> {
  readonly name: string;
  readonly lua: string;
  memory(redis: ScriptCommands, keys: readonly string[], args: readonly string[]): ScriptReply;
  decode(reply: ScriptReply): Result;
}

/** One stream entry: its id (`<ms>-<seq>`) and its string fields. */
export interface StreamEntry {
  id: string;
  fields: Record<string, string>;
}

/** Counts that tell whether a stream consumer keeps up. */
export interface StreamGroupInfo {
  length: number;
  pending: number;
}

/**
 * Shared hot state for gateway replicas: plain values with expiry, atomic scripts, durable
 * streams with consumer groups, and pub/sub. Implemented on Redis and in process memory;
 * one contract test suite holds both to the same behaviour.
 */
export interface Store {
  readonly kind: 'redis' | 'memory';
  /**
   * True on Redis Cluster (and the memory store playing one): a script's keys must share one
   * shard tag (core/store/shard-tags.ts), so work over several entities is split per tag.
   */
  readonly sharded: boolean;
  /** Put before every key: what keeps installations sharing one Redis apart (core/store/binding.ts). */
  readonly prefix: string;
  get(key: string): Promise<string | null>;
  set(key: string, value: string, options?: { ttlMs?: number }): Promise<void>;
  del(...keys: string[]): Promise<number>;
  /** Adds `by`; when the counter is created, it expires after `ttlMs` (if given). */
  incrBy(key: string, by: number, ttlMs?: number): Promise<number>;
  /** Remaining time to live in ms; -1 without expiry, -2 when the key does not exist. */
  pttl(key: string): Promise<number>;
  /** All fields of a hash ({} when missing). */
  hashGetAll(key: string): Promise<Record<string, string>>;
  runScript<Result>(script: StoreScript<Result>, keys: readonly string[], args: readonly (string | number)[]): Promise<Result>;

  streamAdd(stream: string, fields: Record<string, string>, options?: { maxLen?: number }): Promise<string>;
  /** Several entries at once, in order, in one round trip and one command; resolves with their ids. */
  streamAddMany(stream: string, entries: readonly Record<string, string>[], options?: { maxLen?: number }): Promise<string[]>;
  /** Creates the consumer group (and stream) if missing; safe to call repeatedly. */
  streamCreateGroup(stream: string, group: string): Promise<void>;
  /** New entries for this consumer, waiting up to `blockMs` when there are none. */
  streamReadGroup(stream: string, group: string, consumer: string, options: { count: number; blockMs: number }): Promise<StreamEntry[]>;
  streamAck(stream: string, group: string, ids: readonly string[]): Promise<number>;
  /** Takes over entries another consumer read but did not ack within `minIdleMs` (crash recovery). */
  streamClaimIdle(stream: string, group: string, consumer: string, options: { minIdleMs: number; count: number }): Promise<StreamEntry[]>;
  streamDelete(stream: string, ids: readonly string[]): Promise<number>;
  streamGroupInfo(stream: string, group: string): Promise<StreamGroupInfo>;

  publish(channel: string, message: string): Promise<void>;
  /** Calls `handler` for each message on `channel` until the returned function is called. */
  subscribe(channel: string, handler: (message: string) => void): Promise<() => Promise<void>>;

  ping(): Promise<void>;
  close(): Promise<void>;
}
