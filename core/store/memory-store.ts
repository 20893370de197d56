import { EventEmitter } from 'node:events';
import { MemoryData } from './memory-data.js';
import { MemoryStreams } from './memory-streams.js';
import { keySlot } from './shard-tags.js';
import type { ScriptReply, Store, StoreScript, StreamEntry, StreamGroupInfo } from './types.js';

/**
 * The store for a single process (embedded defaults and tests): the same contract as the
 * Redis store, with state in memory. Only correct with one gateway replica. With `sharded`
 * it refuses scripts whose keys span Redis Cluster slots, as a cluster does, so the suites
 * can hold the cluster code paths to the contract without a cluster.
 */
export class MemoryStore implements Store {
  readonly kind = 'memory' as const;
  readonly sharded: boolean;
  private readonly data: MemoryData;
  private readonly streams: MemoryStreams;
  private readonly bus = new EventEmitter();
  private readonly sweeper: NodeJS.Timeout;
  private closed = false;

  constructor(
    readonly prefix = '',
    clock: () => number = Date.now,
    options: { sharded?: boolean } = {},
  ) {
    this.sharded = options.sharded === true;
    this.data = new MemoryData(clock);
    this.streams = new MemoryStreams(clock);
    this.bus.setMaxListeners(0);
    this.sweeper = setInterval(() => this.data.sweep(), 30_000);
    this.sweeper.unref();
  }

  /** Loses every key, stream and consumer group, as a Redis restarted without its data would (fault tests). */
  flushAll(): void {
    this.data.clear();
    this.streams.clear();
  }

  private k(key: string): string {
    return this.prefix + key;
  }

  async get(key: string): Promise<string | null> {
    return this.data.get(this.k(key));
  }

  async set(key: string, value: string, options?: { ttlMs?: number }): Promise<void> {
    this.data.set(this.k(key), value, options?.ttlMs);
  }

  async del(...keys: string[]): Promise<number> {
    return keys.reduce((n, key) => n + this.data.del(this.k(key)), 0);
  }

  async incrBy(key: string, by: number, ttlMs?: number): Promise<number> {
    const value = this.data.incrBy(this.k(key), by);
    if (ttlMs !== undefined && this.data.pttl(this.k(key)) === -1) this.data.pexpire(this.k(key), ttlMs);
    return value;
  }

  async pttl(key: string): Promise<number> {
    return this.data.pttl(this.k(key));
  }

  async hashGetAll(key: string): Promise<Record<string, string>> {
    return this.data.hgetall(this.k(key));
  }

  async runScript<Result>(script: StoreScript<Result>, keys: readonly string[], args: readonly (string | number)[]): Promise<Result> {
    const names = keys.map((key) => this.k(key));
    if (this.sharded && names.some((name) => keySlot(name) !== keySlot(names[0]!))) {
      throw new Error(`CROSSSLOT Keys in request don't hash to the same slot (script ${script.name}: ${keys.join(' ')})`);
    }
    const reply: ScriptReply = script.memory(this.data, names, args.map(String));
    return script.decode(reply);
  }

  async streamAdd(stream: string, fields: Record<string, string>, options?: { maxLen?: number }): Promise<string> {
    return this.streams.add(this.k(stream), fields, options?.maxLen);
  }

  async streamAddMany(stream: string, entries: readonly Record<string, string>[], options?: { maxLen?: number }): Promise<string[]> {
    return entries.map((fields) => this.streams.add(this.k(stream), fields, options?.maxLen));
  }

  async streamCreateGroup(stream: string, group: string): Promise<void> {
    this.streams.createGroup(this.k(stream), group);
  }

  streamReadGroup(stream: string, group: string, consumer: string, options: { count: number; blockMs: number }): Promise<StreamEntry[]> {
    return this.streams.readGroup(this.k(stream), group, consumer, options.count, options.blockMs, () => this.closed);
  }

  async streamAck(stream: string, group: string, ids: readonly string[]): Promise<number> {
    return this.streams.ack(this.k(stream), group, ids);
  }

  async streamClaimIdle(
    stream: string,
    group: string,
    consumer: string,
    options: { minIdleMs: number; count: number },
  ): Promise<StreamEntry[]> {
    return this.streams.claimIdle(this.k(stream), group, consumer, options.minIdleMs, options.count);
  }

  async streamDelete(stream: string, ids: readonly string[]): Promise<number> {
    return this.streams.delete(this.k(stream), ids);
  }

  async streamGroupInfo(stream: string, group: string): Promise<StreamGroupInfo> {
    return this.streams.info(this.k(stream), group);
  }

  async publish(channel: string, message: string): Promise<void> {
    // Delivered on a later tick, as a Redis subscriber would see it, never inside publish().
    setImmediate(() => this.bus.emit(this.k(channel), message));
  }

  async subscribe(channel: string, handler: (message: string) => void): Promise<() => Promise<void>> {
    const name = this.k(channel);
    this.bus.on(name, handler);
    return async () => {
      this.bus.off(name, handler);
    };
  }

  async ping(): Promise<void> {
    if (this.closed) throw new Error('store is closed');
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.sweeper);
    this.streams.wakeAll();
    this.bus.removeAllListeners();
  }
}
