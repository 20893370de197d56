import { createServer, type AddressInfo, type Socket } from 'node:net';
import type { PGlite } from '@electric-sql/pglite';

/**
 * Serves one embedded PGlite database to `pg` clients over a loopback TCP socket, so the same
 * driver and SQL run as against PostgreSQL in production.
 *
 * PGlite is a single backend: it keeps one session state (the unnamed prepared statement and
 * portal, the open transaction) for every client. An exchange of the extended query protocol
 * (Parse, Bind, Describe, Execute … up to Sync) therefore has to run with no other client's
 * message in between — otherwise client B's Parse replaces client A's unnamed statement and
 * A's Bind fails ("bind message supplies 2 parameters, but prepared statement requires 1") or,
 * worse, runs B's SQL with A's values. The server gives the database to one connection at a
 * time: a connection holds it from its first message of an exchange until the exchange ends
 * (Sync, a simple Query or a function call) outside a transaction; inside a transaction it keeps
 * it until the transaction ends. Others wait in arrival order.
 */
export interface EmbeddedSocketServer {
  readonly host: string;
  readonly port: number;
  /** A `pg` connection string for the served database. */
  readonly url: string;
  /** Stops accepting, closes every client and waits for the exchange in flight. */
  stop(): Promise<void>;
}

// Protocol codes of the untyped messages a client may send first.
const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;
const CANCEL_REQUEST = 80877102;
// Typed frontend messages that end an exchange (the server answers with ReadyForQuery).
const SYNC = 0x53; // 'S'
const QUERY = 0x51; // 'Q'
const FUNCTION_CALL = 0x46; // 'F'
const COPY_DONE = 0x63; // 'c'
const COPY_FAIL = 0x66; // 'f'
const TERMINATE = 0x58; // 'X'

/** One run of the database: the bytes of consecutive messages, and whether they end an exchange. */
interface Unit {
  bytes: Buffer;
  endsExchange: boolean;
}

/** Hands the database to one connection at a time, the others in arrival order. */
class DatabaseTurn {
  private owner: Connection | undefined;
  private readonly waiting: Array<{ connection: Connection; resolve: (granted: boolean) => void }> = [];

  /** Resolves true once `connection` holds the database, false if it was forgotten meanwhile. */
  acquire(connection: Connection): Promise<boolean> {
    if (this.owner === connection) return Promise.resolve(true);
    if (!this.owner) {
      this.owner = connection;
      return Promise.resolve(true);
    }
    return new Promise((resolve) => this.waiting.push({ connection, resolve }));
  }

  holds(connection: Connection): boolean {
    return this.owner === connection;
  }

  release(connection: Connection): void {
    if (this.owner !== connection) return;
    const next = this.waiting.shift();
    this.owner = next?.connection;
    next?.resolve(true);
  }

  /** A closed connection: drop it from the line (its pending acquire resolves false). */
  forget(connection: Connection): void {
    const index = this.waiting.findIndex((entry) => entry.connection === connection);
    if (index >= 0) this.waiting.splice(index, 1)[0]!.resolve(false);
  }
}

class Connection {
  private buffer: Buffer = Buffer.alloc(0);
  private started = false;
  private readonly units: Unit[] = [];
  private readonly pendingMessages: Buffer[] = [];
  private draining: Promise<void> | undefined;
  private closed = false;

  constructor(
    private readonly socket: Socket,
    private readonly db: PGlite,
    private readonly turn: DatabaseTurn,
  ) {
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.receive(chunk));
    socket.on('error', () => socket.destroy());
    socket.on('close', () => void this.onClose());
  }

  /** Resolves once the unit in flight (if any) has finished. */
  settled(): Promise<void> {
    return this.draining ?? Promise.resolve();
  }

  destroy(): void {
    this.socket.destroy();
  }

  private receive(chunk: Buffer): void {
    this.buffer = this.buffer.length ? Buffer.concat([this.buffer, chunk]) : chunk;
    this.split();
    if (this.units.length && !this.draining) this.draining = this.drain().finally(() => (this.draining = undefined));
  }

  /** Cuts complete messages off the buffer and groups them into units. */
  private split(): void {
    while (!this.closed) {
      if (!this.started) {
        if (this.buffer.length < 8) return;
        const length = this.buffer.readInt32BE(0);
        const code = this.buffer.readInt32BE(4);
        if (code === SSL_REQUEST || code === GSSENC_REQUEST) {
          this.buffer = this.buffer.subarray(8);
          this.socket.write('N'); // no encryption on loopback; the client goes on in clear
          continue;
        }
        if (code === CANCEL_REQUEST) {
          this.socket.end(); // PGlite cannot cancel a running statement
          return;
        }
        if (this.buffer.length < length) return;
        this.units.push({ bytes: this.buffer.subarray(0, length), endsExchange: true });
        this.buffer = this.buffer.subarray(length);
        this.started = true;
        continue;
      }
      if (this.buffer.length < 5) return;
      const size = 1 + this.buffer.readInt32BE(1);
      // A length below its own four bytes is no message: the parser would never move past it (and
      // spin on the event loop), so the connection is broken off.
      if (size < 5) {
        this.socket.destroy();
        return;
      }
      if (this.buffer.length < size) return;
      const message = this.buffer.subarray(0, size);
      this.buffer = this.buffer.subarray(size);
      const type = message[0];
      if (type === TERMINATE) {
        this.socket.end();
        return;
      }
      this.pendingMessages.push(message);
      const endsExchange = type === SYNC || type === QUERY || type === FUNCTION_CALL || type === COPY_DONE || type === COPY_FAIL;
      // A Flush ('H') asks for the answers so far; the exchange (and the turn) goes on.
      if (endsExchange || type === 0x48) {
        this.units.push({ bytes: Buffer.concat(this.pendingMessages), endsExchange });
        this.pendingMessages.length = 0;
      }
    }
  }

  private async drain(): Promise<void> {
    while (this.units.length && !this.closed) {
      if (!(await this.turn.acquire(this))) return;
      const unit = this.units.shift()!;
      try {
        await this.db.runExclusive(() =>
          this.db.execProtocolRawStream(new Uint8Array(unit.bytes), {
            onRawData: (data) => {
              if (data.length && !this.socket.destroyed) this.socket.write(Buffer.from(data));
            },
          }),
        );
      } catch {
        this.socket.destroy(); // PGlite reports SQL errors in the protocol; a throw means the session is broken
        await this.giveBack();
        return;
      }
      if (unit.endsExchange && !this.db.isInTransaction()) this.turn.release(this);
    }
  }

  private async onClose(): Promise<void> {
    this.closed = true;
    this.turn.forget(this);
    await this.settled();
    await this.giveBack();
  }

  /** Releases the database if this connection holds it, rolling back a transaction it left open. */
  private async giveBack(): Promise<void> {
    if (!this.turn.holds(this)) return;
    try {
      if (this.db.isInTransaction() && !this.db.closed) await this.db.exec('ROLLBACK');
    } catch {
      // The database is closing; nothing is left to roll back.
    } finally {
      this.turn.release(this);
    }
  }
}

/** Starts serving `db` on host:port (port 0 picks a free one). */
export async function serveEmbeddedDatabase(db: PGlite, options: { host?: string; port?: number } = {}): Promise<EmbeddedSocketServer> {
  const host = options.host ?? '127.0.0.1';
  await db.waitReady;
  const turn = new DatabaseTurn();
  const connections = new Set<Connection>();
  const server = createServer((socket) => {
    const connection = new Connection(socket, db, turn);
    connections.add(connection);
    socket.on('close', () => connections.delete(connection));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  return {
    host,
    port,
    url: `postgres://postgres@${host}:${port}/postgres?sslmode=disable`,
    stop: async () => {
      const closing = new Promise<void>((resolve) => server.close(() => resolve()));
      const open = [...connections];
      for (const connection of open) connection.destroy();
      await Promise.all(open.map((connection) => connection.settled()));
      await closing;
    },
  };
}
