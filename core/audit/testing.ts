import { onTestFinished } from 'vitest';
import { createServer, connect, type Server, type Socket } from 'node:net';
import knexFactory, { type Knex } from 'knex';
import type { AuditLogger } from './partitions.js';
import type { AuditRecord } from './record.js';

/**
 * A TCP proxy in front of PostgreSQL that a test can switch off (every connection destroyed,
 * new ones refused) and on again: a database outage for one client without stopping the
 * server other tests share.
 */
export class TcpProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  private open = true;

  constructor(private readonly target: { host: string; port: number }) {}

  /** Starts listening on a free loopback port and returns it. */
  async listen(): Promise<number> {
    const server = createServer((client) => {
      if (!this.open) {
        client.destroy();
        return;
      }
      const upstream = connect(this.target.port, this.target.host);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('error', () => undefined);
        socket.on('close', () => {
          this.sockets.delete(socket);
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream).pipe(client);
    });
    this.server = server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    if (address === null || typeof address !== 'object') throw new Error('proxy has no port');
    return address.port;
  }

  /** The outage: cuts every open connection and refuses new ones until enable(). */
  disable(): void {
    this.open = false;
    for (const socket of this.sockets) socket.destroy();
  }

  /** Ends the outage. */
  enable(): void {
    this.open = true;
  }

  /** Cuts everything and stops listening. */
  async close(): Promise<void> {
    this.disable();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

interface PgTarget {
  host: string;
  port: number;
  user: string;
  password: string;
  database: string;
}

/** Where a knex instance connects (knex keeps the URL the test databases are opened with as parsed fields). */
export function connectionTarget(knex: Knex): PgTarget {
  const connection = (knex.client as { config: Knex.Config }).config.connection;
  // A URL, or (core/db/database.ts, with its connection bounds) an object carrying one.
  const connectionString =
    typeof connection === 'string'
      ? connection
      : typeof connection === 'object' && connection !== null && 'connectionString' in connection
        ? String(connection.connectionString)
        : undefined;
  if (connectionString !== undefined) {
    const url = new URL(connectionString);
    return {
      host: url.hostname,
      port: Number(url.port || 5432),
      user: decodeURIComponent(url.username),
      password: decodeURIComponent(url.password),
      database: url.pathname.slice(1),
    };
  }
  if (typeof connection !== 'object' || connection === null || !('host' in connection))
    throw new Error('cannot tell where this knex connects');
  const c = connection as Record<string, unknown>;
  return {
    host: String(c.host),
    port: Number(c.port ?? 5432),
    user: String(c.user ?? 'postgres'),
    password: String(c.password ?? ''),
    database: String(c.database ?? 'postgres'),
  };
}

/** The same target as a connection URL, for another process. */
export function connectionUrl(knex: Knex): string {
  const t = connectionTarget(knex);
  return `postgres://${encodeURIComponent(t.user)}:${encodeURIComponent(t.password)}@${t.host}:${t.port}/${encodeURIComponent(t.database)}?sslmode=disable`;
}

/** A proxy in front of the database `knex` talks to, and a small knex that goes through it. */
export async function proxiedKnex(knex: Knex): Promise<{ proxy: TcpProxy; knex: Knex }> {
  const target = connectionTarget(knex);
  const proxy = new TcpProxy({ host: target.host, port: target.port });
  const port = await proxy.listen();
  const proxied = knexFactory({
    client: 'pg',
    connection: { ...target, host: '127.0.0.1', port },
    pool: { min: 0, max: 2 },
    acquireConnectionTimeout: 2_000,
    // knex prints every failed connection attempt; during a deliberate outage that is noise.
    log: { warn: () => undefined, error: () => undefined, debug: () => undefined, deprecate: () => undefined },
  });
  return { proxy, knex: proxied };
}

/** A logger that keeps what it is told, for assertions and a quiet test run. */
export function memoryLogger(): AuditLogger & { lines: { level: 'warn' | 'error'; msg: string; obj: object }[] } {
  const lines: { level: 'warn' | 'error'; msg: string; obj: object }[] = [];
  return {
    lines,
    warn: (obj, msg) => lines.push({ level: 'warn', msg, obj }),
    error: (obj, msg) => lines.push({ level: 'error', msg, obj }),
  };
}

/** A realistic record; `i` makes request id and timestamp distinct, `overrides` adjusts fields. */
export function sampleRecord(i: number, overrides: Partial<AuditRecord> = {}): AuditRecord {
  const started = Date.UTC(2025, 2, 14, 9, 0, 0) + i * 1000;
  return {
    requestId: `req_${String(i).padStart(6, '0')}`,
    timestamp: new Date(started).toISOString(),
    keyId: 'key_a',
    payerId: 'org_1',
    interface: 'chat.completions',
    model: 'gpt-4o-mini',
    supplier: 'sim-eu',
    region: 'eu',
    inputTokens: 120 + i,
    outputTokens: 30,
    cachedInputTokens: 0,
    cacheWriteInputTokens: 0,
    costUsd: (36_000 + i) / 1e9,
    latencyMs: 210,
    status: 200,
    code: null,
    failover: false,
    attempts: [{ supplier: 'sim-eu', region: 'eu', startedAt: started + 2, latencyMs: 205, outcome: 'ok', status: 200 }],
    session: null,
    ...overrides,
  };
}

/** Runs cleanups in reverse order of registration after the test, whether it passed or not. */
export function cleanupStack(): <T>(value: T, close: (value: T) => Promise<unknown>) => T {
  const stack: (() => Promise<unknown>)[] = [];
  onTestFinished(async () => {
    let failure: unknown;
    for (const close of stack.reverse()) {
      try {
        await close();
      } catch (error) {
        failure ??= error;
      }
    }
    if (failure !== undefined) throw failure;
  });
  return (value, close) => {
    stack.push(() => close(value));
    return value;
  };
}

/** The one polling helper, re-exported for the tests that take their support from here. */
export { waitFor } from '../../test/support/wait-for.js';
