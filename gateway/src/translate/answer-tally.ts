import { ApiError } from '../../../core/errors/index.js';
import { answerItems, type AnswerWire } from '../tokens/answer-items.js';
import type { Countable } from '../tokens/tokenizer.js';
import type { SseEvent, Translator } from './types.js';

/** Event data kept unread per request before it is read down to its text (about 200 events of an OpenAI stream). */
const keptEventChars = 32 * 1024;

/**
 * Generated text per output token past which a stream is a supplier ignoring the output limit:
 * English runs ~4 characters a token and the longest tokens of common vocabularies are runs of
 * spaces or punctuation, so an honest answer averages far below this over its whole length.
 */
const charsPerTokenBound = 32;
/** Text any stream may carry whatever its limit (a small `max_tokens` never cuts an honest answer). */
const minTextBound = 64 * 1024;

/** The most generated text a stream with this output token limit is relayed before it is ended. */
function generatedTextBound(outputTokens: number): number {
  return Math.max(minTextBound, outputTokens * charsPerTokenBound);
}

/** A stream's output token limit and whose stream it is: its text bound, and the error that ends it. */
export interface OutputLimit {
  outputTokens: number;
  supplier: string;
}

/**
 * Keeps what a supplier answered (the whole JSON, or each stream event's data) so that the
 * answer's output tokens can be counted if the supplier reports no usage, or is cut off before it
 * does (pipeline/charged-usage.ts). Short answers are kept as the event references they are and
 * read only if a count is needed: the common case costs an array push per event. Past
 * `keptEventChars` the kept events are read down to their generated text, so a long stream keeps
 * its text (a few bytes per event) rather than every event's JSON framing (~200 bytes each):
 * memory per stream stays small however many run at once.
 */
export class AnswerTally {
  private whole: unknown;
  private events: string[] = [];
  private eventChars = 0;
  /** The text of events already read down (joined per batch: one string instead of hundreds). */
  private readonly texts: string[] = [];
  /** Whether any event so far carried generated content, and how many events were looked at for it. */
  private contentSeen = false;
  private eventsLookedAt = 0;

  /** Text already read down, in characters (checked against `textBound`). */
  private textChars = 0;
  /** generatedTextBound of the output limit (no limit: none). */
  private readonly textBound: number;

  /**
   * `wire`: the format the answer is read in; for chat, the translator reading it sets it (see
   * `tallied`). `limit`: a stream whose generated text passes its bound (generatedTextBound) is
   * ended — a supplier that ignores the output limit was relayed until the call's timeout (outside
   * probe: 300,000 chunks in 15 s for `max_tokens: 5`), the client charged the limit and the
   * operator billed for all of it.
   */
  constructor(
    private wire: AnswerWire = 'openai-chat',
    private readonly limit?: OutputLimit,
  ) {
    this.textBound = limit ? generatedTextBound(limit.outputTokens) : Number.POSITIVE_INFINITY;
  }

  readBy(wire: AnswerWire): void {
    this.wire = wire;
  }

  sawWhole(answer: unknown): void {
    this.whole = answer;
  }

  sawEvent(data: string): void {
    this.events.push(data);
    this.eventChars += data.length;
    if (this.eventChars > keptEventChars) this.readDown();
  }

  /**
   * The answer as one text: a stream's deltas counted piece by piece would count more tokens
   * than the text they make (a word split over two deltas is two pieces), 30 instead of 13 for a
   * short sentence streamed a character at a time.
   */
  items(): Iterable<Countable> {
    return [this.texts.join('') + joined(answerItems(this.wire, { whole: this.whole, events: this.events }))];
  }

  /**
   * Whether the supplier has generated anything yet (text, reasoning, a tool call) rather than
   * only framing (message_start, ping, a role chunk, response.created). Until then a stream can
   * still fail over (pipeline/stream-to-client.ts). Reads each event once, and none after the
   * first with content.
   */
  sawContent(): boolean {
    for (; !this.contentSeen && this.eventsLookedAt < this.events.length; this.eventsLookedAt++) {
      this.contentSeen = joined(answerItems(this.wire, { events: [this.events[this.eventsLookedAt]!] })) !== '';
    }
    return this.contentSeen;
  }

  private readDown(): void {
    const text = joined(answerItems(this.wire, { events: this.events }));
    if (text !== '') this.contentSeen = true;
    this.texts.push(text);
    this.events = [];
    this.eventChars = 0;
    this.eventsLookedAt = 0;
    this.textChars += text.length;
    if (this.textChars > this.textBound) throw pastOutputLimit(this.limit!, this.textBound);
  }
}

/** The supplier kept generating far past the output limit: its stream is ended (after output: an error event). */
function pastOutputLimit(limit: OutputLimit, chars: number): ApiError {
  return new ApiError('invalid_backend_response', {
    humanMessage: `Supplier ${limit.supplier} kept generating past the output limit of ${limit.outputTokens} tokens (more than ${chars} characters); the gateway ended the stream`,
    details: { supplier: limit.supplier, output_token_limit: limit.outputTokens },
  });
}

/** The texts of an answer's items, one after the other. */
const joined = (items: Iterable<string>): string => [...items].join('');

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

  streamClose(...args: Parameters<NonNullable<Translator['streamClose']>>): string {
    return this.inner.streamClose?.(...args) ?? '';
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
