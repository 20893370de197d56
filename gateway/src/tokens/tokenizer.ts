import { setImmediate as nextTurn } from 'node:timers/promises';
import { countTokens } from 'gpt-tokenizer';

/**
 * Local token counting with a maintained BPE tokenizer (gpt-tokenizer, o200k_base), used where
 * the supplier offers no counting endpoint. This module runs in the token counter's worker
 * thread (count-worker.ts), never on the serving thread: its ~200,000 merge ranks and its cache
 * of counted pieces are tens of megabytes of long-lived objects that every full garbage
 * collection of the serving thread's heap would otherwise mark again (bench/RESULTS.md). Counts of other model families' tokenizers differ
 * by a few percent; the figure is an estimate for budgeting and context checks, not a bill.
 *
 * The BPE merge step is quadratic in the length of one pre-tokenizer piece, and an unbroken run
 * of letters (or CJK text, or base64) is a single piece: 100 KB of one letter took seconds. So
 * text is cut into pieces of at most `maxPieceLength` characters before encoding — at the last
 * whitespace inside the window, where the pre-tokenizer would cut too, else hard. A hard cut adds
 * at most about one token per piece (measured: +0.1 % on prose and base64, exact on runs of one
 * letter, CJK and digits), and the work becomes linear: about 3–10 ms per 100 KB.
 */
export const maxPieceLength = 256;

const isSpace = (code: number) => code === 0x20 || (code >= 0x09 && code <= 0x0d);
const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff;

/** The text in pieces of at most `maxPieceLength` characters (never splitting a surrogate pair). */
export function* boundedPieces(text: string): Generator<string> {
  let start = 0;
  while (text.length - start > maxPieceLength) {
    let cut = start + maxPieceLength;
    let space = cut;
    while (space > start + 1 && !isSpace(text.charCodeAt(space))) space--;
    if (space > start + 1) cut = space;
    else if (isHighSurrogate(text.charCodeAt(cut - 1))) cut--;
    yield text.slice(start, cut);
    start = cut;
  }
  if (start < text.length) yield text.slice(start);
}

/** Tokens of a text, linear in its length (see `maxPieceLength`). Synchronous: for short texts. */
export function countTextTokens(text: string): number {
  let total = 0;
  for (const piece of boundedPieces(text)) total += countTokens(piece);
  return total;
}

/** Longest one count works before the next waiting count gets its turn. */
const sliceMs = 4;
const waiting: (() => void)[] = [];
let pumping = false;

/**
 * One shared lane for every count in the counter thread: each turn of its event loop runs one
 * slice of one count, so however many large counts run at once, a small one (and the thread's
 * message handling) waits at most one slice per count ahead of it.
 */
function turn(): Promise<void> {
  return new Promise((resolve) => {
    waiting.push(resolve);
    if (!pumping) {
      pumping = true;
      void pump();
    }
  });
}

async function pump(): Promise<void> {
  while (waiting.length > 0) {
    await nextTurn();
    waiting.shift()!();
  }
  pumping = false;
}

/** An item to count: text, or a fixed number of tokens (framing, images). */
export type Countable = string | number;

/**
 * Tokens of all the items, counted in slices of a few milliseconds on the shared lane. Stops as
 * soon as the total exceeds `stopAbove` (then the result is some number above it), so a limit
 * check costs no more work than the limit itself.
 */
export async function countInLane(items: Iterable<Countable>, stopAbove = Number.POSITIVE_INFINITY): Promise<number> {
  let total = 0;
  let sliceStart = Number.NEGATIVE_INFINITY;
  for (const item of items) {
    if (typeof item === 'number') {
      total += item;
      if (total > stopAbove) return total;
      continue;
    }
    for (const piece of boundedPieces(item)) {
      if (performance.now() - sliceStart > sliceMs) {
        await turn();
        sliceStart = performance.now();
      }
      total += countTokens(piece);
      if (total > stopAbove) return total;
    }
  }
  return total;
}
