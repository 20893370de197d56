import { afterEach, expect, test } from 'vitest';
import { connect, Socket } from 'node:net';
import { Duplex } from 'node:stream';
import pg from 'pg';
import { waitFor } from '../../test/support/wait-for.js';
import { serveEmbeddedDatabase, type EmbeddedSocketServer } from './embedded-server.js';
import { openMigratedPGlite } from './testing.js';

const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (closers.length) await closers.pop()!().catch(() => undefined);
});

async function servedDatabase(): Promise<EmbeddedSocketServer> {
  // The migrated snapshot: any database serves here, and loading one is quicker than initdb.
  const db = await openMigratedPGlite();
  closers.push(() => db.close());
  const server = await serveEmbeddedDatabase(db);
  closers.push(() => server.stop());
  return server;
}

// --- a minimal frontend speaking the wire protocol by hand, so the test decides which message
// --- reaches the server when (a driver would send a whole exchange in one write)
function message(type: string, ...parts: Buffer[]): Buffer {
  const body = Buffer.concat(parts);
  const header = Buffer.alloc(5);
  header.write(type, 0, 'latin1');
  header.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([header, body]);
}
const cstring = (text: string) => Buffer.from(`${text}\0`);
const int16 = (value: number) => Buffer.from([(value >> 8) & 0xff, value & 0xff]);
function int32(value: number): Buffer {
  const buffer = Buffer.alloc(4);
  buffer.writeInt32BE(value);
  return buffer;
}
const parse = (sql: string) => message('P', cstring(''), cstring(sql), int16(0));
function bind(...values: string[]): Buffer {
  const params = values.map((value) => Buffer.concat([int32(Buffer.byteLength(value)), Buffer.from(value)]));
  return message('B', cstring(''), cstring(''), int16(0), int16(values.length), ...params, int16(0));
}
const execute = () => message('E', cstring(''), int32(0));
const flush = () => message('H');
const sync = () => message('S');

interface RawClient {
  socket: Socket;
  /** Types of the backend messages received so far, in order (e.g. '1' ParseComplete, 'Z' ReadyForQuery). */
  types: string[];
  /** DataRow first columns and ErrorResponse messages, in order. */
  answers: string[];
}

async function rawClient(server: EmbeddedSocketServer): Promise<RawClient> {
  const socket = connect(server.port, server.host);
  closers.push(async () => socket.destroy());
  const client: RawClient = { socket, types: [], answers: [] };
  let buffer = Buffer.alloc(0);
  socket.on('data', (chunk: Buffer) => {
    buffer = Buffer.concat([buffer, chunk]);
    while (buffer.length >= 5 && buffer.length >= 1 + buffer.readInt32BE(1)) {
      const size = 1 + buffer.readInt32BE(1);
      const type = String.fromCharCode(buffer[0]!);
      const body = buffer.subarray(5, size);
      client.types.push(type);
      if (type === 'D') client.answers.push(body.subarray(6, 6 + body.readInt32BE(2)).toString());
      if (type === 'E')
        client.answers.push(
          `error: ${body
            .toString('latin1')
            .split('\0')
            .find((field) => field.startsWith('M'))
            ?.slice(1)}`,
        );
      buffer = buffer.subarray(size);
    }
  });
  const params = Buffer.concat([cstring('user'), cstring('postgres'), cstring('database'), cstring('postgres'), Buffer.from([0])]);
  const startup = Buffer.concat([int32(8 + params.length), int32(196608), params]);
  socket.write(startup);
  await waitFor('the start-up answer', () => client.types.includes('Z'));
  return client;
}

const readyCount = (client: RawClient) => client.types.filter((type) => type === 'Z').length;

test("one client's extended-protocol exchange is never interleaved with another's", async () => {
  const server = await servedDatabase();
  const a = await rawClient(server);
  const b = await rawClient(server);

  // A starts an exchange and waits for its Parse to be answered…
  a.socket.write(Buffer.concat([parse('select ($1::int + $2::int)::text'), flush()]));
  await waitFor("A's ParseComplete", () => a.types.includes('1'));
  // …then B sends a whole exchange of its own with a one-parameter statement,
  b.socket.write(Buffer.concat([parse('select $1::text'), bind('from B'), execute(), sync()]));
  // and A finishes its exchange binding two values to what must still be its own statement.
  a.socket.write(Buffer.concat([bind('2', '3'), execute(), sync()]));

  await waitFor('both exchanges answered', () => readyCount(a) === 2 && readyCount(b) === 2);
  expect(a.answers).toEqual(['5']);
  expect(b.answers).toEqual(['from B']);
});

test('a transaction keeps the database until it ends; a client that disconnects inside one is rolled back', async () => {
  const server = await servedDatabase();
  const setup = new pg.Client({ connectionString: server.url });
  closers.push(() => setup.end());
  await setup.connect();
  await setup.query('create table marks (v text)');

  const a = await rawClient(server);
  const b = await rawClient(server);
  a.socket.write(message('Q', cstring("begin; insert into marks values ('uncommitted')")));
  await waitFor('A inside its transaction', () => readyCount(a) === 2);
  // B's read waits for A's transaction instead of running inside it.
  b.socket.write(message('Q', cstring('select count(*)::text from marks')));
  a.socket.destroy();
  await waitFor("B's answer", () => readyCount(b) === 2);
  expect(b.answers).toEqual(['0']);
});

/**
 * A stream for pg.Client that connects to the server itself and splits the client's writes into
 * one protocol message per TCP write, each on its own turn of the event loop — how a busy machine
 * delivers them, and what lets another client's messages arrive in between.
 */
function messagePerWrite(port: number, host: string): Duplex {
  const target = new Socket();
  let pending = Buffer.alloc(0);
  let started = false;
  let chain = Promise.resolve();
  const duplex = new Duplex({
    read() {},
    write(chunk: Buffer, _encoding, done) {
      pending = Buffer.concat([pending, chunk]);
      const pieces: Buffer[] = [];
      for (;;) {
        const size = !started ? (pending.length >= 4 ? pending.readInt32BE(0) : 0) : pending.length >= 5 ? 1 + pending.readInt32BE(1) : 0;
        if (!size || pending.length < size) break;
        pieces.push(pending.subarray(0, size));
        pending = pending.subarray(size);
        started = true;
      }
      for (const piece of pieces)
        chain = chain.then(() => new Promise<void>((resolve) => setImmediate(() => target.write(piece, () => resolve()))));
      void chain.then(() => done());
    },
    final(done) {
      target.end();
      done();
    },
  });
  target.on('data', (chunk) => duplex.push(chunk));
  target.on('close', () => duplex.push(null));
  target.on('error', (error) => duplex.destroy(error));
  duplex.on('close', () => target.destroy());
  // The socket surface pg.Client uses.
  Object.assign(duplex, {
    connect: () => target.connect(port, host, () => duplex.emit('connect')),
    setNoDelay: () => target.setNoDelay(true),
    setKeepAlive: () => undefined,
  });
  return duplex;
}

test('several pg clients running parameterized queries at once each get their own answers', async () => {
  const server = await servedDatabase();
  const clients = await Promise.all(
    Array.from({ length: 4 }, async () => {
      const client = new pg.Client({
        connectionString: server.url,
        stream: () => messagePerWrite(server.port, server.host) as unknown as Socket,
      });
      closers.push(() => client.end());
      await client.connect();
      return client;
    }),
  );
  const failures: string[] = [];
  await Promise.all(
    clients.map(async (client, c) => {
      for (let i = 0; i < 25; i++) {
        try {
          // Alternating statements with different parameter counts: an interleaved Bind fails loudly.
          if (i % 2) {
            const { rows } = await client.query<{ sum: number }>('select $1::int + $2::int as sum', [c, i]);
            if (rows[0]?.sum !== c + i) failures.push(`client ${c} query ${i}: ${JSON.stringify(rows)}`);
          } else {
            const { rows } = await client.query<{ text: string }>('select $1::text as text', [`${c}/${i}`]);
            if (rows[0]?.text !== `${c}/${i}`) failures.push(`client ${c} query ${i}: ${JSON.stringify(rows)}`);
          }
        } catch (error) {
          failures.push(`client ${c} query ${i}: ${(error as Error).message}`);
        }
      }
    }),
  );
  expect(failures).toEqual([]);
});

test('a message whose length field is below its own four bytes closes that connection instead of looping forever', async () => {
  const server = await servedDatabase();
  const bad = await rawClient(server);
  const closed = new Promise<void>((resolve) => bad.socket.once('close', () => resolve()));
  const header = Buffer.alloc(5);
  header.write('Q', 0, 'latin1');
  header.writeInt32BE(-1, 1); // a length no message can have; the parser used to make no progress on it
  bad.socket.write(header);
  await closed;
  // The server (and its event loop) still serves everyone else.
  const good = await rawClient(server);
  good.socket.write(message('Q', cstring("select 'still here'")));
  await waitFor('the answer of a healthy client', () => good.answers.includes('still here'));
});
