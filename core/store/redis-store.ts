import { createHash } from 'node:crypto';
import { Cluster, Redis } from 'ioredis';
import { untagged } from './shard-tags.js';
import type { ScriptReply, Store, StoreScript, StreamEntry, StreamGroupInfo } from './types.js';
import { settledWithin } from '../time/within.js';

type RawEntries = [string, string[]][];

function toEntries(raw: RawEntries | null | undefined): StreamEntry[] {
  if (!raw) return [];
  const entries: StreamEntry[] = [];
  for (const [id, flat] of raw) {
    if (!flat) continue; // XAUTOCLAIM reports entries deleted meanwhile with nil fields
    const fields: Record<string, string> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) fields[flat[i]!] = flat[i + 1]!;
    entries.push({ id, fields });
  }
  return entries;
}

type Client = Redis | Cluster;

/** How long a store command may wait for Redis's answer by default (SVC_STORE_TIMEOUT_MS). */
export const defaultStoreTimeoutMs = 2_000;

/** Reconnection attempts are this far apart at most (ioredis's default grows to 2 s). */
const maxReconnectDelayMs = 500;

/**
 * Options of a single Redis's command connection, so that no command waits for Redis much
 * longer than `timeoutMs` (up to about twice that when an earlier command on the connection is
 * still unanswered) — a request then gets 503, or its audit record the spill file. Without them
 * a refused Redis held each command up to ~6 s (the offline queue was flushed every third
 * reconnection attempt, 2 s apart once the outage was old), and a Redis that accepts
 * connections but never answers (frozen, or behind a black-holed proxy: each reconnection
 * "succeeds", so the attempt count never grows) held it for ever:
 *
 * - commandTimeout: a command unanswered after `timeoutMs` fails;
 * - socketTimeout: a connection that answers nothing that long after a command is dropped and
 *   made again, so commands do not pile up in a dead socket (withoutStaleSocketTimer);
 * - connectTimeout: a connection attempt gives up after `timeoutMs` (ioredis's default: 10 s);
 * - nothing is sent later: no resending of the commands a dropped connection had in flight
 *   (autoResendUnfulfilledCommands), and no offline queue once the client was first ready
 *   (failFastOnceReady: while reconnecting, commands fail at once). ioredis keeps a command
 *   it timed out in those queues and would send it when the connection is back — an
 *   enforcement script whose request was already refused would then reserve money.
 *
 * Not for a cluster's node connections: ioredis's Cluster gives every node connection an offline
 * queue and no retry strategy whatever the options say, and resends a command whose connection
 * closed, so there a command timeout would be followed by the command being sent anyway (seen
 * in review with a two-master stand-in). A cluster keeps ioredis's defaults: a node that is down
 * fails its commands, a frozen one holds them (docs/reliability.md).
 *
 * test/reliability/store-partition.test.ts holds the gateway to this.
 */
function singleConnectionOptions(timeoutMs: number) {
  return {
    maxRetriesPerRequest: 1,
    commandTimeout: timeoutMs,
    socketTimeout: timeoutMs,
    connectTimeout: timeoutMs,
    autoResendUnfulfilledCommands: false,
    retryStrategy: (attempt: number) => Math.min(attempt * 50, maxReconnectDelayMs),
  };
}

/** Options the cluster's node connections get (see singleConnectionOptions for why no timeouts). */
const clusterNodeOptions = { maxRetriesPerRequest: 2 };

/**
 * ioredis arms its socket timeout when a command is written and never clears the timer when the
 * connection closes, so a timer of a dropped connection later destroys the new, healthy one
 * (seen in review: a reconnected client dropped again 1.5 s later, a command failing after ~2×
 * the timeout). Cleared on close here; `socketTimeoutTimer` is ioredis's own field.
 */
function withoutStaleSocketTimer(client: Redis): Redis {
  client.on('close', () => {
    const internals = client as unknown as { socketTimeoutTimer?: NodeJS.Timeout };
    clearTimeout(internals.socketTimeoutTimer);
    internals.socketTimeoutTimer = undefined;
  });
  return client;
}

/** The seed URLs of `REDIS_URL`: one URL, or several separated by commas (cluster seeds). */
export function redisSeedUrls(url: string): string[] {
  return url
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '');
}

/** The cluster's seed nodes as ioredis's Cluster takes them. */
export function clusterSeedNodes(url: string): { host: string; port: number }[] {
  return redisSeedUrls(url).map((seed) => {
    const parsed = new URL(seed);
    return { host: parsed.hostname, port: Number(parsed.port || 6379) };
  });
}

/**
 * Options undoing singleConnectionOptions' bounds for a connection whose commands wait by design
 * (blocking reads, subscriptions). Such a connection resends what a dropped connection had in
 * flight (ioredis's default): with no command timeout to settle them, commands it did not resend
 * would never settle — seen as an UNSUBSCRIBE that hung a gateway's stop.
 */
const unboundedWaits = { commandTimeout: undefined, socketTimeout: undefined, autoResendUnfulfilledCommands: true };

/**
 * A blocking read's connection (XREADGROUP BLOCK waits by design, so no command or socket
 * timeout): when Redis has not answered `timeoutMs` after the BLOCK time, ioredis ends the read
 * as empty (blockingTimeout), and streamReadGroup drops the connection instead of reading on it
 * again. A cluster's keeps the cluster's options (singleConnectionOptions).
 */
function blockingConnection(client: Client, timeoutMs: number): Client {
  if (client instanceof Cluster) return client.duplicate();
  return client.duplicate({ ...unboundedWaits, blockingTimeout: timeoutMs, blockingTimeoutGrace: timeoutMs });
}

/**
 * The subscriber's connection: no command or socket timeout, because ioredis subscribes again
 * after each reconnection without handling a failure — a timed-out SUBSCRIBE there would be an
 * unhandled rejection, which ends the process (seen in review).
 */
function subscriberConnection(client: Client): Client {
  if (client instanceof Cluster) return client.duplicate();
  return client.duplicate(unboundedWaits);
}

/**
 * A client queues commands while it has no connection (ioredis's offline queue) and sends them
 * once connected: a command that already failed (timed out) would be sent too, and a cluster's
 * queue has no bound at all. Queueing is kept only while the first connection is being made —
 * start-up commands wait for it — and turned off once the client is ready, once that first
 * connection fails, or `timeoutMs` after it began (a Redis that accepts but never answers): from
 * then on a store that is away fails each command at once ("Stream isn't writeable…",
 * "Connection is closed.", or "Cluster isn't ready…"), a store outage (503), or what runs
 * without the store. Queued until the first ready instead, every command of a gateway started
 * during an outage waited for the next failed reconnection, so each request took seconds
 * (found by an outside probe: 1–3 s per request).
 */
function failFastOnceReady(client: Client, timeoutMs: number): Client {
  client.options.enableOfflineQueue = true;
  const failFast = () => {
    clearTimeout(firstConnection);
    client.off('ready', failFast);
    client.off('error', failFast);
    client.options.enableOfflineQueue = false;
  };
  const firstConnection = setTimeout(failFast, timeoutMs).unref();
  client.once('ready', failFast);
  client.once('error', failFast);
  return client;
}

function connect(url: string, cluster: boolean, timeoutMs: number): Client {
  if (!cluster)
    return failFastOnceReady(
      withoutStaleSocketTimer(new Redis(url, { ...singleConnectionOptions(timeoutMs), lazyConnect: false, enableAutoPipelining: true })),
      timeoutMs,
    );
  // Credentials, TLS and the connection name come from the first seed (docs/configuration.md).
  const first = new URL(redisSeedUrls(url)[0]!);
  const client = new Cluster(clusterSeedNodes(url), {
    enableAutoPipelining: true,
    // Reads go to masters: the enforcement counters are read-modify-write and replicas lag.
    scaleReads: 'master',
    redisOptions: {
      ...clusterNodeOptions,
      connectionName: first.searchParams.get('connectionName') ?? undefined,
      username: first.username ? decodeURIComponent(first.username) : undefined,
      password: first.password ? decodeURIComponent(first.password) : undefined,
      tls: first.protocol === 'rediss:' ? {} : undefined,
    },
  });
  return failFastOnceReady(client, timeoutMs);
}

/**
 * XADD of several entries to one stream in one script call. ARGV: the approximate MAXLEN (or
 * ''), then per entry its field count and its field/value pairs. Returns the ids in order.
 */
const streamAddManyLua = `
local maxLen = ARGV[1]
local ids = {}
local i = 2
while i <= #ARGV do
  local n = tonumber(ARGV[i])
  local command = maxLen == '' and {'XADD', KEYS[1], '*'} or {'XADD', KEYS[1], 'MAXLEN', '~', maxLen, '*'}
  for j = 1, 2 * n do command[#command + 1] = ARGV[i + j] end
  ids[#ids + 1] = redis.call(unpack(command))
  i = i + 1 + 2 * n
end
return ids
`;

/**
 * The store for production: Redis through ioredis, one server or a Redis Cluster (`cluster`).
 * Blocking stream reads and subscriptions each get their own connection, so they never stall
 * the commands of the request hot path.
 *
 * Key names carry their shard tag in braces (core/store/shard-tags.ts): kept on a cluster, where
 * they keep an entity's keys on one slot; dropped on a single server, whose key names are the
 * same as before cluster support.
 */
export class RedisStore implements Store {
  readonly kind = 'redis' as const;
  readonly sharded: boolean;
  private readonly client: Client;
  private subscriber: Client | undefined;
  /** Connections inside a blocking read; close() disconnects them, ending the read. */
  private readonly blockingClients = new Set<Client>();
  /** Connections of finished blocking reads, for the next read. */
  private readonly idleBlockingClients: Client[] = [];
  private readonly handlers = new Map<string, Set<(message: string) => void>>();
  private readonly shas = new Map<string, string>();
  private readonly timeoutMs: number;

  constructor(
    url: string,
    readonly prefix = '',
    options: { cluster?: boolean; timeoutMs?: number } = {},
  ) {
    this.sharded = options.cluster === true;
    this.timeoutMs = options.timeoutMs ?? defaultStoreTimeoutMs;
    this.client = connect(url, this.sharded, this.timeoutMs);
    // Errors surface on the commands that fail; the event itself must not crash the process
    // (nor, on a cluster, be printed by ioredis for each node connection that fails).
    this.client.on('error', () => undefined);
    if (this.sharded) this.client.on('node error', () => undefined);
  }

  private k(key: string): string {
    return this.prefix + (this.sharded ? key : untagged(key));
  }

  async get(key: string): Promise<string | null> {
    return this.client.get(this.k(key));
  }

  async set(key: string, value: string, options?: { ttlMs?: number }): Promise<void> {
    if (options?.ttlMs !== undefined) await this.client.set(this.k(key), value, 'PX', options.ttlMs);
    else await this.client.set(this.k(key), value);
  }

  async del(...keys: string[]): Promise<number> {
    if (keys.length === 0) return 0;
    if (!this.sharded) return this.client.del(...keys.map((key) => this.k(key)));
    // A cluster refuses a DEL across slots (CROSSSLOT): one per key, pipelined by ioredis.
    const deleted = await Promise.all(keys.map((key) => this.client.del(this.k(key))));
    return deleted.reduce((sum, n) => sum + n, 0);
  }

  async incrBy(key: string, by: number, ttlMs?: number): Promise<number> {
    const multi = this.client.multi().incrby(this.k(key), by);
    if (ttlMs !== undefined) multi.pexpire(this.k(key), ttlMs, 'NX');
    const results = await multi.exec();
    const [error, value] = results?.[0] ?? [new Error('transaction aborted'), null];
    if (error) throw error;
    return Number(value);
  }

  async pttl(key: string): Promise<number> {
    return this.client.pttl(this.k(key));
  }

  async hashGetAll(key: string): Promise<Record<string, string>> {
    return this.client.hgetall(this.k(key));
  }

  async runScript<Result>(script: StoreScript<Result>, keys: readonly string[], args: readonly (string | number)[]): Promise<Result> {
    const reply = await this.evalLua(script.name, script.lua, keys, args);
    return script.decode(reply as ScriptReply);
  }

  /** EVALSHA of `lua` (sha computed once per name), falling back to EVAL when Redis lacks it. */
  private async evalLua(name: string, lua: string, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    let sha = this.shas.get(name);
    if (!sha) {
      sha = createHash('sha1').update(lua).digest('hex');
      this.shas.set(name, sha);
    }
    const prefixed = keys.map((key) => this.k(key));
    try {
      return await this.client.evalsha(sha, prefixed.length, ...prefixed, ...args);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      return this.client.eval(lua, prefixed.length, ...prefixed, ...args);
    }
  }

  async streamAdd(stream: string, fields: Record<string, string>, options?: { maxLen?: number }): Promise<string> {
    const flat = Object.entries(fields).flat();
    const id =
      options?.maxLen !== undefined
        ? await this.client.xadd(this.k(stream), 'MAXLEN', '~', options.maxLen, '*', ...flat)
        : await this.client.xadd(this.k(stream), '*', ...flat);
    if (!id) throw new Error('XADD returned no id');
    return id;
  }

  async streamAddMany(stream: string, entries: readonly Record<string, string>[], options?: { maxLen?: number }): Promise<string[]> {
    if (entries.length === 0) return [];
    if (entries.length === 1) return [await this.streamAdd(stream, entries[0]!, options)];
    // One command for the lot: N XADDs cost N command parses, replies and promises here.
    const args: (string | number)[] = [options?.maxLen ?? ''];
    for (const fields of entries) {
      const names = Object.keys(fields);
      args.push(names.length);
      for (const name of names) args.push(name, fields[name]!);
    }
    const ids = (await this.evalLua('stream_add_many', streamAddManyLua, [stream], args)) as string[];
    if (!Array.isArray(ids) || ids.length !== entries.length) throw new Error('stream_add_many returned the wrong number of ids');
    return ids;
  }

  async streamCreateGroup(stream: string, group: string): Promise<void> {
    try {
      await this.client.xgroup('CREATE', this.k(stream), group, '0', 'MKSTREAM');
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('BUSYGROUP')) throw error;
    }
  }

  async streamReadGroup(
    stream: string,
    group: string,
    consumer: string,
    options: { count: number; blockMs: number },
  ): Promise<StreamEntry[]> {
    // XREADGROUP BLOCK holds its connection, so each concurrent reader needs its own. Idle ones
    // are kept and reused: a connection per read (connect, ready check, read, close) cost more
    // round trips and CPU than the reads themselves under load.
    const blocking = this.idleBlockingClients.pop() ?? this.newBlockingClient();
    this.blockingClients.add(blocking);
    let reusable = false;
    const startedAt = Date.now();
    try {
      const reply = (await blocking.xreadgroup(
        'GROUP',
        group,
        consumer,
        'COUNT',
        options.count,
        'BLOCK',
        Math.max(1, options.blockMs),
        'STREAMS',
        this.k(stream),
        '>',
      )) as [string, RawEntries][] | null;
      // An empty read that took the BLOCK time and the whole grace was ended by the client, not
      // by Redis (a partition): that connection is not read on again.
      // A connection not ready (made while Redis answers nothing) queued the read instead of
      // sending it: dropped too, which fails what it queued rather than sending it later.
      reusable = blocking.status === 'ready' && (reply !== null || Date.now() - startedAt < Math.max(1, options.blockMs) + this.timeoutMs);
      return toEntries(reply?.[0]?.[1]);
    } catch (error) {
      if (!this.blockingClients.has(blocking)) return []; // closed while waiting
      throw error;
    } finally {
      // A connection whose read failed may be in any state: it is dropped, not reused.
      if (reusable && this.blockingClients.delete(blocking)) this.idleBlockingClients.push(blocking);
      else {
        this.blockingClients.delete(blocking);
        blocking.disconnect();
      }
    }
  }

  private newBlockingClient(): Client {
    const blocking = failFastOnceReady(blockingConnection(this.client, this.timeoutMs), this.timeoutMs);
    blocking.on('error', () => undefined);
    return blocking;
  }

  async streamAck(stream: string, group: string, ids: readonly string[]): Promise<number> {
    return ids.length === 0 ? 0 : this.client.xack(this.k(stream), group, ...ids);
  }

  async streamClaimIdle(
    stream: string,
    group: string,
    consumer: string,
    options: { minIdleMs: number; count: number },
  ): Promise<StreamEntry[]> {
    const reply = (await this.client.xautoclaim(this.k(stream), group, consumer, options.minIdleMs, '0-0', 'COUNT', options.count)) as [
      string,
      RawEntries,
      string[]?,
    ];
    return toEntries(reply[1]);
  }

  async streamDelete(stream: string, ids: readonly string[]): Promise<number> {
    return ids.length === 0 ? 0 : this.client.xdel(this.k(stream), ...ids);
  }

  async streamGroupInfo(stream: string, group: string): Promise<StreamGroupInfo> {
    const [length, pending] = await Promise.all([
      this.client.xlen(this.k(stream)),
      this.client.xpending(this.k(stream), group).catch(() => [0]) as Promise<unknown[]>,
    ]);
    return { length, pending: Number(pending[0] ?? 0) };
  }

  async publish(channel: string, message: string): Promise<void> {
    await this.client.publish(this.k(channel), message);
  }

  async subscribe(channel: string, handler: (message: string) => void): Promise<() => Promise<void>> {
    const name = this.k(channel);
    if (!this.subscriber) {
      const subscriber = failFastOnceReady(subscriberConnection(this.client), this.timeoutMs);
      subscriber.on('error', () => undefined);
      subscriber.on('message', (from: string, message: string) => {
        for (const h of this.handlers.get(from) ?? []) h(message);
      });
      // ioredis renews on reconnection only the subscriptions Redis confirmed: one asked for while
      // Redis was down failed (and was let go, so a start-up is not held) and would never be made.
      // Every time the connection is ready, each channel with a handler is subscribed (again: a
      // repeated SUBSCRIBE changes nothing).
      subscriber.on('ready', () => {
        const channels = [...this.handlers.keys()];
        if (channels.length > 0) subscriber.subscribe(...channels).catch(() => undefined);
      });
      this.subscriber = subscriber;
    }
    let set = this.handlers.get(name);
    if (!set) {
      set = new Set();
      this.handlers.set(name, set);
      // Waited for as long as a command is, no longer: a process starting while Redis is down or
      // frozen would otherwise never listen. The subscription still goes out once Redis answers
      // (queued until the connection is first ready, renewed on every reconnection).
      const subscribing = this.subscriber.subscribe(name);
      subscribing.catch(() => undefined);
      await settledWithin(subscribing, this.timeoutMs);
    }
    set.add(handler);
    return async () => {
      const current = this.handlers.get(name);
      current?.delete(handler);
      if (current && current.size === 0) {
        this.handlers.delete(name);
        // Best effort: no handler is left for the channel, so a subscription the server keeps
        // (Redis unreachable now, resubscribed on reconnection) delivers to nobody. Failing here
        // would fail the stop of a process during a store outage — and waiting on a frozen Redis
        // (the subscriber has no command timeout) held the stop for as long as it was frozen.
        if (this.subscriber) await settledWithin(this.subscriber.unsubscribe(name), this.timeoutMs);
      }
    };
  }

  async ping(): Promise<void> {
    await this.client.ping();
  }

  async close(): Promise<void> {
    for (const blocking of [...this.blockingClients, ...this.idleBlockingClients.splice(0)]) blocking.disconnect();
    this.blockingClients.clear();
    this.handlers.clear();
    if (this.subscriber) await closeClient(this.subscriber, this.timeoutMs);
    await closeClient(this.client, this.timeoutMs);
  }
}

/**
 * QUIT (a clean goodbye) when connected, answered within `timeoutMs`; otherwise — not connected,
 * refused, or unanswered (a frozen Redis) — disconnect, which also stops reconnecting.
 */
async function closeClient(client: Client, timeoutMs: number): Promise<void> {
  if (client.status === 'ready' && (await settledWithin(client.quit(), timeoutMs)) === 'fulfilled') return;
  client.disconnect();
}
