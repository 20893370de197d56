// The token log's writer batches events off the request path: an event recorded while a write is
// under way must still be written (CI: under load a write outlasted the flush interval, the timer
// found it running, and the second event waited for a next event that never came).
import { test } from 'vitest';
import type { Knex } from 'knex';
import { waitFor } from '../../test/support/wait-for.js';
import { CredentialEventWriter, type CredentialEvent } from './credential-events.js';

function slowDatabase() {
  const written: unknown[][] = [];
  let release: () => void = () => undefined;
  let slow = true;
  const knex = (() => ({
    insert: async (rows: unknown[]) => {
      if (slow) await new Promise<void>((resolve) => (release = resolve));
      written.push(rows);
    },
  })) as unknown as Knex;
  return { knex, written, finishWrite: () => ((slow = false), release()) };
}

const event = (keyName: string): CredentialEvent => ({
  at: new Date(),
  provider: 'p',
  keyName,
  kind: 'rate_limited',
  source: 'gateway',
});

test('an event recorded while a write is under way is written once that write ends', async () => {
  const db = slowDatabase();
  const writer = new CredentialEventWriter(db.knex, { flushMs: 5 });
  writer.record(event('a'));
  await waitFor(
    'the first write under way',
    () => db.written.length === 0 && (writer as unknown as { flushing?: Promise<void> }).flushing !== undefined,
  );
  writer.record(event('b'));
  // Its timer fires while the first write still waits (the flush it starts finds that write running).
  await waitFor("the second event's timer to fire", () => (writer as unknown as { timer?: NodeJS.Timeout }).timer === undefined);
  db.finishWrite();
  await waitFor('both events written', () => db.written.flat().length === 2);
  await writer.close();
});
