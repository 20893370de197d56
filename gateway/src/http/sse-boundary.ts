/**
 * Bytes of an SSE stream relayed whole events at a time: what ends with a blank line goes on, the
 * rest waits for the bytes that complete it. A relay that passed bytes on as they came left a
 * half-sent event in front of its own error event when the supplier broke off mid-event, and the
 * client's parser read the two as one broken event. What waits is bounded by the caller (one
 * event at most, the meter's bound).
 */
export class SseBoundary {
  private pending: Buffer = Buffer.alloc(0);

  /** The complete events `chunk` finishes (possibly none), to send now. */
  take(chunk: Buffer): Buffer {
    const from = Math.max(0, this.pending.length - 3);
    const all = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    const end = lastEventEnd(all, from);
    if (end < 0) {
      this.pending = all;
      return Buffer.alloc(0);
    }
    this.pending = all.subarray(end);
    return all.subarray(0, end);
  }

  /** What is left when the stream ended normally (an event the supplier did not close with a blank line). */
  rest(): Buffer {
    const rest = this.pending;
    this.pending = Buffer.alloc(0);
    return rest;
  }
}

const LF = 0x0a;
const CR = 0x0d;

/** Just past the last blank line (`\n\n`, `\r\r` or `\r\n\r\n`) found at or after `from`; -1 when none. */
function lastEventEnd(bytes: Buffer, from: number): number {
  for (let i = bytes.length - 1; i > from; i--) {
    const c = bytes[i];
    if (c === LF && bytes[i - 1] === LF) return i + 1;
    if (c === LF && i >= 3 && bytes[i - 1] === CR && bytes[i - 2] === LF && bytes[i - 3] === CR) return i + 1;
    if (c === CR && bytes[i - 1] === CR && bytes[i + 1] !== LF) return i + 1;
  }
  return -1;
}
