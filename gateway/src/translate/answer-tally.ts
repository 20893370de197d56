import { answerItems, type AnswerWire } from '../tokens/answer-items.js';
import type { Countable } from '../tokens/tokenizer.js';
import type { SseEvent, Translator } from './types.js';

/**
 * Keeps what a supplier answered (the whole JSON, or each stream event's data) so that the
 * answer's output tokens can be counted if the supplier reports no usage, or is cut off before it
 * does. Keeping is a reference per event, nothing is parsed unless a count is needed
 * (pipeline/charged-usage.ts).
 */
export class AnswerTally {
  private whole: unknown;
  private readonly events: string[] = [];

  /** `wire`: the format the answer is read in; for chat, the translator reading it sets it (see `tallied`). */
  constructor(private wire: AnswerWire = 'openai-chat') {}

  readBy(wire: AnswerWire): void {
    this.wire = wire;
  }

  sawWhole(answer: unknown): void {
    this.whole = answer;
  }

  sawEvent(data: string): void {
    this.events.push(data);
  }

  items(): Iterable<Countable> {
    return answerItems(this.wire, { whole: this.whole, events: this.events });
  }
}

/** The translator, telling the tally what the supplier answered before translating it. */
class TalliedTranslator implements Translator {
  constructor(
    private readonly inner: Translator,
    private readonly tally: AnswerTally,
  ) {}

  request() {
    return this.inner.request();
  }

  response(upstream: unknown): unknown {
    this.tally.sawWhole(upstream);
    return this.inner.response(upstream);
  }

  streamEvent(event: SseEvent): string {
    this.tally.sawEvent(event.data);
    return this.inner.streamEvent(event);
  }

  streamEnd(): string {
    return this.inner.streamEnd();
  }

  streamError(...args: Parameters<Translator['streamError']>): string {
    return this.inner.streamError(...args);
  }

  usage() {
    return this.inner.usage();
  }
}

/** `translator` reading the `wire` format, feeding `tally` when one is given. */
export function tallied(translator: Translator, wire: AnswerWire, tally: AnswerTally | undefined): Translator {
  if (!tally) return translator;
  tally.readBy(wire);
  return new TalliedTranslator(translator, tally);
}
