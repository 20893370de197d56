// A reply PostgreSQL sent that never arrives — swallowed by a proxy or a middlebox, on a
// connection the kernel still thinks alive (keep-alive probes are answered by the middlebox) —
// left the waiting query waiting for ever: the audit writer stopped on a COMMIT until restart,
// with the server session idle in its transaction, holding row locks. Every query on a server
// connection is bounded (`query_timeout`), the connection whose reply was lost is closed so the
// pool discards it rather than handing out one stuck behind the lost reply, and the server ends a
// session left idle in a transaction (`idle_in_transaction_session_timeout`), releasing its locks.

/** The pg client as far as this module touches it. */
interface PgClient {
  query: (...args: unknown[]) => unknown;
  connection?: { stream?: { destroy: () => void } };
  __knex__disposed?: unknown;
}

/** node-postgres's error for a query past `query_timeout`. */
const readTimeoutMessage = 'Query read timeout';

/** Closes `client` (knex then destroys it instead of pooling it). */
function abandon(client: PgClient): void {
  client.__knex__disposed = 'the reply of a query never arrived (query_timeout)';
  client.connection?.stream?.destroy();
}

/**
 * knex's pool `afterCreate`: wraps the client's callback-style `query` (the form knex uses) so a
 * read timeout closes the connection. Other call forms pass through unchanged.
 */
export function closeOnLostReply(client: PgClient, done: (error: Error | null, client: PgClient) => void): void {
  const query = client.query.bind(client);
  client.query = (...args: unknown[]) => {
    const callback = args[1];
    if (typeof callback !== 'function') return query(...args);
    return query(args[0], (error: unknown, result: unknown) => {
      if (error instanceof Error && error.message === readTimeoutMessage) abandon(client);
      (callback as (error: unknown, result: unknown) => void)(error, result);
    });
  };
  done(null, client);
}

/** How long a server connection may wait for a reply, and stay idle inside a transaction. */
export interface ReplyBounds {
  /** Longest wait for one query's reply (client side). */
  queryTimeoutMs: number;
  /** Longest a session may sit idle inside a transaction before the server ends it. */
  idleInTransactionMs: number;
}

/**
 * The default bounds: far above any query the platform serves (a dashboard over a million audit
 * rows takes well under a second), so only a reply that is lost hits them. Migrations run on a
 * connection of their own without them: an index build on a large table may take longer. A
 * transaction may wait on a payment processor's API between statements: 5 minutes idle.
 */
export const defaultReplyBounds: ReplyBounds = { queryTimeoutMs: 60_000, idleInTransactionMs: 300_000 };

/** The server's own bound on one statement: a little under the client's, so a slow statement is cancelled there (its connection stays usable). */
export function statementTimeoutOf(bounds: ReplyBounds): number {
  return Math.max(bounds.queryTimeoutMs - 5_000, Math.ceil(bounds.queryTimeoutMs * 0.8));
}

/** The audit writer's: one batch insert takes milliseconds; a lost reply should stall it for seconds, not a minute. */
export const auditWriterReplyBounds: ReplyBounds = { queryTimeoutMs: 20_000, idleInTransactionMs: 60_000 };
