import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import knexFactory, { type Knex } from 'knex';
import type { PGlite } from '@electric-sql/pglite';
import { lockDataDir } from './data-dir-lock.js';
import { serveEmbeddedDatabase } from './embedded-server.js';
import { migrationSource } from './migrations/index.js';
import { closeOnLostReply, defaultReplyBounds, statementTimeoutOf, type ReplyBounds } from './lost-replies.js';
import { createLogger } from '../telemetry/logger.js';
import { pino, type DestinationStream, type Logger } from 'pino';

/** An open connection pool to the system of record, plus how to shut it down. */
export interface Database {
  /** `postgres` when DATABASE_URL was given, `embedded` for PGlite under the data dir. */
  readonly kind: 'postgres' | 'embedded';
  readonly knex: Knex;
  /** A `pg` connection string of this database (the embedded one's loopback server), for libraries that open their own pool (the job queue). */
  readonly url: string;
  /** Applies pending migrations (idempotent). */
  migrate(): Promise<void>;
  close(): Promise<void>;
}

/** How to open the database: a PostgreSQL URL, or embedded PGlite in a directory (or memory). */
export type DatabaseTarget =
  | {
      kind: 'postgres';
      url: string;
      poolMax?: number;
      /** Bounds on a reply that never comes (lost-replies.ts); the defaults suit every pool but the audit writer's. */
      replyBounds?: ReplyBounds;
    }
  | {
      kind: 'embedded';
      dataDir: string | 'memory';
      poolMax?: number;
      /** An open PGlite to serve instead of opening one on dataDir (tests start from a migrated snapshot); closed with the database. */
      pglite?: PGlite;
    };

/**
 * Bounds on reaching a PostgreSQL server (not the embedded one, whose single backend may keep a
 * new connection waiting behind a long statement for good reason). A server that is partitioned
 * away or frozen accepts no connection, or accepts it and never answers its start-up: without a
 * bound the pool kept trying for 30 s (tarn's creation timeout) before a request needing it got
 * its 503. TCP keep-alive (probes from 10 s of silence on) lets the kernel notice a connection
 * whose server vanished — within minutes, at Linux's default probe interval and count — instead
 * of holding it open for ever.
 */
const postgresConnectTimeoutMs = 5_000;
/** Silence after which a connection's kernel starts keep-alive probes. */
const postgresKeepAliveDelayMs = 10_000;
/** Longest wait for a pooled connection (knex's default is 60 s): past it the caller gets a 503. */
const postgresAcquireTimeoutMs = 10_000;

/** pg connection options bounding how long reaching the server may take. */
export interface ConnectionBounds {
  connectionTimeoutMillis?: number;
  keepAlive?: boolean;
  keepAliveInitialDelayMillis?: number;
}

/** The pg connection options of those bounds for a database of `kind` (none for the embedded one); pg-boss's pool takes them too. */
export function connectionBounds(kind: Database['kind']): ConnectionBounds {
  return kind === 'postgres'
    ? { connectionTimeoutMillis: postgresConnectTimeoutMs, keepAlive: true, keepAliveInitialDelayMillis: postgresKeepAliveDelayMs }
    : {};
}

/**
 * knex's own warnings (a pooled connection that broke: "Connection Error: …") as JSON log lines
 * like every other line of the deployables — knex writes them with console.warn, plain text that
 * broke log pipelines reading one JSON document per line (outside probe: ~100 such lines on
 * stderr while PostgreSQL connections were being terminated). Made on first use.
 */
export function knexLog(destination?: DestinationStream): NonNullable<Knex.Config['log']> {
  let logger: Logger | undefined;
  const line = (method: 'warn' | 'error' | 'debug') => (message: unknown) => {
    const wanted = process.env.LOG_LEVEL ?? 'info';
    const level = wanted in pino.levels.values || wanted === 'silent' ? wanted : 'info';
    logger ??= createLogger({ service: 'database', level, destination: destination ?? pino.destination(2) });
    logger[method]({ component: 'knex' }, message instanceof Error ? message.message : String(message));
  };
  return { warn: line('warn'), error: line('error'), deprecate: line('warn'), debug: line('debug') };
}

/** `replies`: the bounds on a reply that never comes (lost-replies.ts); `null` for none (migrations). */
function knexForUrl(url: string, poolMax: number, kind: Database['kind'], replies: ReplyBounds | null = defaultReplyBounds): Knex {
  return knexFactory({
    client: 'pg',
    connection: {
      connectionString: url,
      ...connectionBounds(kind),
      ...(kind === 'postgres' &&
        replies && {
          query_timeout: replies.queryTimeoutMs,
          // The server cancels a slow statement first, so the connection stays usable: only a lost reply reaches query_timeout.
          statement_timeout: statementTimeoutOf(replies),
          idle_in_transaction_session_timeout: replies.idleInTransactionMs,
        }),
    },
    pool: { min: 0, max: poolMax, ...(kind === 'postgres' && replies && { afterCreate: closeOnLostReply }) },
    ...(kind === 'postgres' && { acquireConnectionTimeout: postgresAcquireTimeoutMs }),
    migrations: { migrationSource, tableName: 'knex_migrations' },
    log: knexLog(),
  });
}

async function openPostgres(url: string, poolMax: number, replies: ReplyBounds = defaultReplyBounds): Promise<Database> {
  const knex = knexForUrl(url, poolMax, 'postgres', replies);
  return {
    kind: 'postgres',
    url,
    knex,
    // Migrations on a connection without the reply bounds: an index build may take minutes.
    migrate: async () => {
      const migrator = knexForUrl(url, 1, 'postgres', null);
      try {
        await migrator.migrate.latest();
      } finally {
        await migrator.destroy();
      }
    },
    close: () => knex.destroy(),
  };
}

/** Where the embedded database keeps PGlite's files under the data directory. */
export function embeddedFilesDir(dataDir: string): string {
  return resolve(dataDir, 'pg');
}

/**
 * Embedded PostgreSQL: PGlite (Postgres compiled to WASM) served on a loopback socket so the
 * same `pg` driver and SQL run as in production. PGlite is one backend for every connection;
 * the socket server (embedded-server.ts) gives it to one connection's exchange or transaction
 * at a time, so the pool's connections queue instead of mixing their protocol messages.
 */
async function openEmbedded(dataDir: string | 'memory', poolMax: number, given?: PGlite): Promise<Database> {
  const { PGlite } = await import('@electric-sql/pglite');
  let pgDir: string | undefined;
  let unlock = () => {};
  if (dataDir !== 'memory' && !given) {
    // PGlite's files have one writer: a second process on the same directory is refused.
    unlock = lockDataDir(dataDir);
    pgDir = embeddedFilesDir(dataDir);
    mkdirSync(pgDir, { recursive: true });
  }
  let pglite: PGlite;
  try {
    pglite = given ?? (await PGlite.create(pgDir ? { dataDir: pgDir } : {}));
  } catch (error) {
    unlock();
    throw error;
  }
  const server = await serveEmbeddedDatabase(pglite);
  const knex = knexForUrl(server.url, poolMax, 'embedded');
  return {
    kind: 'embedded',
    url: server.url,
    knex,
    migrate: async () => {
      await knex.migrate.latest();
    },
    close: async () => {
      try {
        await knex.destroy();
        await server.stop();
        await pglite.close();
      } finally {
        unlock();
      }
    },
  };
}

/** Opens the database the settings point at: DATABASE_URL, else embedded PGlite under SVC_DATA_DIR. */
export async function openDatabase(target: DatabaseTarget): Promise<Database> {
  switch (target.kind) {
    case 'postgres':
      return openPostgres(target.url, target.poolMax ?? 10, target.replyBounds);
    case 'embedded':
      // PGlite runs one statement at a time; a small pool avoids long client-side queues.
      return openEmbedded(target.dataDir, Math.min(target.poolMax ?? 4, 4), target.pglite);
    default: {
      const unreachable: never = target;
      throw new Error(`unknown database target ${JSON.stringify(unreachable)}`);
    }
  }
}

/** Chooses the database target from settings: DATABASE_URL wins, otherwise embedded under dataDir. */
export function databaseTargetFromSettings(settings: {
  DATABASE_URL?: string | undefined;
  SVC_DATA_DIR: string;
  SVC_DB_POOL_MAX: number;
}): DatabaseTarget {
  return settings.DATABASE_URL
    ? { kind: 'postgres', url: settings.DATABASE_URL, poolMax: settings.SVC_DB_POOL_MAX }
    : { kind: 'embedded', dataDir: settings.SVC_DATA_DIR, poolMax: settings.SVC_DB_POOL_MAX };
}
