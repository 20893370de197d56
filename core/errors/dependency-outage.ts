// Which thrown values mean "a data store the gateway depends on is unreachable" — a 503 the
// client may retry, not a 500 bug. Recognised by shape, so this module needs neither ioredis
// nor pg: those libraries' connection failures are what a Redis or PostgreSQL outage throws.

/** The dependency an outage error came from, as far as its shape tells. */
export type OutageSource = 'store' | 'database' | 'network';

/** Socket-level failures: the peer is gone, refused or silent. */
export const networkCodes: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);

/**
 * Replies of a Redis server (or cluster) that cannot serve now but will: the cluster or this
 * slot's shard is down or moving (CLUSTERDOWN, TRYAGAIN), a replica lost its master
 * (MASTERDOWN), the server is still loading its data (LOADING).
 */
const transientReplies = ['CLUSTERDOWN', 'TRYAGAIN', 'MASTERDOWN', 'LOADING'];

/** ioredis's own words for a cluster it could not reach or route to. */
const clusterClientFailures = [
  'Too many Cluster redirections',
  'Failed to refresh slots cache',
  'None of startup nodes is available',
  "Cluster isn't ready",
];

/**
 * ioredis: a command given up after its retries, sent on (or aborted by) a closed connection, refused by a
 * Redis (Cluster) that is down for now, or not routable in a cluster. Matched by name and
 * message; these strings are Redis's and ioredis's own and stable across their versions.
 */
function isStoreOutage(error: { name?: unknown; message?: unknown }): boolean {
  if (error.name === 'MaxRetriesPerRequestError' || error.name === 'ClusterAllFailedError') return true;
  const message = typeof error.message === 'string' ? error.message : '';
  return (
    message === 'Connection is closed.' ||
    // No answer within SVC_STORE_TIMEOUT_MS (core/store/redis-store.ts, commandTimeout).
    message === 'Command timed out' ||
    // A pipelined command whose connection closed after part of the pipeline was answered
    // (auto-pipelining sends most commands so): ioredis aborts the rest instead of resending.
    (error.name === 'AbortError' && message.startsWith('Command aborted due to connection close')) ||
    message.startsWith("Stream isn't writeable") ||
    message.startsWith('Reached the max retries per request limit') ||
    transientReplies.some((reply) => message.startsWith(`${reply} `)) ||
    clusterClientFailures.some((failure) => message.startsWith(failure))
  );
}

/**
 * pg and knex: SQLSTATE class 08 (connection exception), 57P01–57P03 (the server shutting down
 * or starting), 53300 (too many connections), 55000 for a database not accepting connections
 * (`ALTER DATABASE … ALLOW_CONNECTIONS false`, maintenance), a pool that could not hand out a
 * connection in time, the connection dropping mid-query, or a query whose reply never came
 * (pg's query_timeout: core/db/lost-replies.ts).
 */
function isDatabaseOutage(error: { name?: unknown; message?: unknown; code?: unknown }): boolean {
  const code = typeof error.code === 'string' ? error.code : '';
  const message = typeof error.message === 'string' ? error.message : '';
  if (/^08/.test(code) || /^57P0[123]$/.test(code) || code === '53300') return true;
  if (code === '55000' && message.includes('is not currently accepting connections')) return true;
  if (error.name === 'KnexTimeoutError') return true;
  return (
    // knex puts the query before pg's own words: "select … - Query read timeout".
    message.endsWith('Query read timeout') ||
    message.startsWith('Connection terminated') ||
    message === 'Client has encountered a connection error and is not queryable' ||
    // pg's connectionTimeoutMillis (core/db/database.ts): the server did not complete a connection in time.
    message === 'timeout expired'
  );
}

/** The outage `error` (or one of its causes) stands for, or undefined for any other failure. */
export function outageSource(error: unknown): OutageSource | undefined {
  for (let current: unknown = error, depth = 0; current && typeof current === 'object' && depth < 5; depth++) {
    const e = current as { name?: unknown; message?: unknown; code?: unknown; cause?: unknown };
    if (isStoreOutage(e)) return 'store';
    if (isDatabaseOutage(e)) return 'database';
    if (typeof e.code === 'string' && networkCodes.has(e.code)) return 'network';
    current = e.cause;
  }
  return undefined;
}

/** What a client is told for each source: what is down and that retrying is the remedy. */
export const outageMessages: Record<OutageSource, string> = {
  store: "The gateway's shared store (Redis) is unreachable; retry in a few seconds",
  database: "The gateway's database (PostgreSQL) is unreachable; retry in a few seconds",
  network: 'A service the gateway depends on is unreachable; retry in a few seconds',
};
