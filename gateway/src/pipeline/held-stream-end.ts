// A stream's last frames wait for its audit record (docs/reliability.md, "Audit records and
// debits: never dropped"). A JSON answer is sent once its record is in the audit stream (or the
// spill file); a stream used to send its final usage event, its totals and its end as soon as the
// supplier's answer was whole, and only then was the record appended — a gateway killed in between
// had served a complete answer with no record anywhere and never charged it (outside probe: 23 of
// 260 complete streams lost in a kill -9 under load). So the stream's close is held here when the
// answer is whole, and released by the pipeline once the record is appended (serve-routed.ts),
// whatever happened meanwhile: a client that left gets its connection ended, nothing more.
import type { FastifyReply } from 'fastify';

/** Streams whose last frames wait for their record, by reply (only streams that started are here). */
const held = new WeakMap<FastifyReply, () => void>();

/** Holds `close` (the stream's last frames and its end) until releaseStreamEnd. */
export function holdStreamEnd(reply: FastifyReply, close: () => void): void {
  held.set(reply, close);
}

/** Sends a held stream's last frames and ends it; nothing for a reply with none held. */
export function releaseStreamEnd(reply: FastifyReply): void {
  const close = held.get(reply);
  if (close) {
    held.delete(reply);
    close();
  }
}
