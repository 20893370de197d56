import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';
import { createParser, type EventSourceMessage, type ParseError } from 'eventsource-parser';
import { ApiError, toApiError } from '../../../core/errors/index.js';
import { errorWithoutCredential } from '../suppliers/upstream-error.js';
import { drained } from '../http/backpressure.js';
import { holdStreamEnd } from './held-stream-end.js';
import { abandonBody, tooLarge } from '../http/bounded-body.js';
import { failedBeforeFirstByte, streamBreak, type UpstreamResponse } from '../http/upstream-client.js';
import { totalsHeaders } from '../routing/routing-headers.js';
import { totalsComment } from '../translate/shared/sse-frames.js';
import type { ChargedCall, Translator } from '../translate/types.js';
import { headersSetSoFar } from './answer-headers.js';
import { routingRecord } from './attempts.js';
import { parseSupplierJson, readSupplierAnswer } from './upstream-json.js';
import type { SupplierProtocol } from '../../../core/config/index.js';
import { supplierErrorIn } from '../translate/shared/supplier-answers.js';

/**
 * Headers of an SSE response; `x-accel-buffering` stops nginx-style proxies from batching events.
 * No `Connection` header: Node keeps the connection or closes it as the client asked (a client's
 * `Connection: close`, or HTTP/1.0, is honoured).
 */
export const sseHeaders = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
} as const;

/** Trailers announced on every chunked stream; filled in from the caller's `charged()` at the end. */
export const trailerNames = 'x-svc-input-tokens, x-svc-output-tokens, x-svc-cost-usd';

/**
 * Whether the answer to `request` is sent chunked, and so may carry trailers: not to an HTTP/1.0
 * client (nginx's default toward upstreams), where Node refuses a `Trailer` header and the stream
 * then broke as `internal_error` after its status line. There the totals are in the comment alone.
 */
function carriesTrailers(request: IncomingMessage): boolean {
  return request.httpVersionMajor > 1 || (request.httpVersionMajor === 1 && request.httpVersionMinor >= 1);
}

/** The status line's headers of a stream: SSE's, and the totals' trailer names where trailers can follow. */
export function streamHeadHeaders(request: IncomingMessage): Record<string, string> {
  return carriesTrailers(request) ? { ...sseHeaders, trailer: trailerNames } : { ...sseHeaders };
}

/** Ends a stream: the totals' trailers where the answer is chunked, then the end. */
export function endStream(raw: ServerResponse, request: IncomingMessage, totals: Record<string, string> | undefined): void {
  if (totals && carriesTrailers(request)) raw.addTrailers(totals);
  raw.end();
}

/**
 * Whether translated frames close the client's stream — chat's `data: [DONE]`, the messages
 * family's `message_stop` — so that they wait for the request's audit record (held-stream-end.ts).
 * At a line's start only: an answer's text is JSON inside a frame, where a line break is escaped.
 */
export function closesStream(text: string): boolean {
  return (
    text.startsWith('data: [DONE]') ||
    text.includes('\ndata: [DONE]') ||
    text.startsWith('event: message_stop') ||
    text.includes('\nevent: message_stop')
  );
}

/** Adds a wait for the client to the request's routing record (failover reads it). */
export function noteClientWait(reply: FastifyReply, ms: number): void {
  const record = routingRecord(reply.request);
  record.waitedOnClientMs = (record.waitedOnClientMs ?? 0) + ms;
}

/**
 * The parser's own failure as the supplier's. One SSE event (a line, or the data lines of one
 * event) is held to the supplier's answer bound (SVC_SUPPLIER_ANSWER_MAX_BYTES, in characters),
 * since a line that never ends is held whole (three such streams took the process out of memory);
 * only an over-long event stops the stream (other parse errors are skipped lines).
 */
export function parseFailure(error: ParseError, supplier: string, limit: number): ApiError | undefined {
  return error.type === 'max-buffer-size-exceeded' ? tooLarge(supplier, limit, 'sent a stream event of') : undefined;
}

/** What happened to a stream, for the caller's accounting. */
export interface StreamOutcome {
  /** True once any byte went to the client (after that, failures are in-stream events). */
  started: boolean;
  error: ApiError | undefined;
}

/** What the relay needs beyond the stream and its translator. */
export interface StreamRelay {
  /** The answer's headers, sent with the status line. */
  headers: () => Record<string, string>;
  /** What the call is charged, computed once the stream ended. */
  charged: () => Promise<ChargedCall | undefined>;
  /** The supplier's name, for errors. */
  supplier: string;
  /** The supplier's protocol: how an error document it answers instead of a stream reads. */
  protocol: SupplierProtocol;
  /** Whether the supplier has generated content yet (AnswerTally.sawContent). */
  sawContent: () => boolean;
  /** The most characters one event may hold (the supplier answer bound). */
  maxEventChars: number;
  /** The body's chunks, read from the moment the supplier answered (http/body-chunks.ts). */
  chunks: AsyncGenerator<Buffer, void, undefined>;
  /** The credential the supplier was sent: masked in the errors its stream reports (supplier-call.ts `sentCredential`). */
  credential: string | undefined;
}

/**
 * Framing held back before the first content is sent anyway after this long, so a client (and
 * the proxies between) is not left without a status line while a supplier keeps a stream open
 * without generating.
 */
export const holdFramingMs = 10_000;

/** Whether a supplier answered a stream request with a JSON document (refuseJsonForStream): a header check. */
export function answeredJson(upstream: UpstreamResponse): boolean {
  const type = upstream.headers['content-type'];
  return typeof type === 'string' && /^\s*application\/json\b/i.test(type);
}

/**
 * A supplier that answers a stream request with one JSON document (it ignored `stream: true`, or a
 * proxy before it answered with an error) sent no stream: said as such, before anything reached the
 * client, so the attempt fails over — rather than "the stream stopped before it was complete". A
 * document that is the supplier's error object is that error, read as a whole answer's 2xx error
 * body is (supplierErrorIn: the supplier's code and message, without the credential it was sent);
 * it was a generic invalid_backend_response that dropped both. Read from `chunks`, at most `limit`
 * bytes. Only called when `answeredJson`: never on a stream.
 */
export async function refuseJsonForStream(
  upstream: UpstreamResponse,
  chunks: AsyncIterator<Buffer>,
  supplier: string,
  protocol: SupplierProtocol,
  limit: number,
  credential: string | undefined,
): Promise<never> {
  const parts: Buffer[] = [];
  let size = 0;
  let document: unknown;
  try {
    for (let next = await chunks.next(); !next.done && size <= limit; next = await chunks.next()) {
      parts.push(next.value);
      size += next.value.length;
    }
    if (size <= limit) document = parseSupplierJson(Buffer.concat(parts, size).toString('utf8'));
  } catch {
    // Not readable as JSON (or the body broke): no error of the supplier's to relay.
  }
  abandonBody(upstream);
  const error = supplierErrorIn(protocol, document);
  if (error) throw errorWithoutCredential(error, credential);
  throw new ApiError('invalid_backend_response', {
    humanMessage: `Supplier ${supplier} answered a stream request with a JSON document instead of a stream`,
    details: { supplier },
  });
}

/** A supplier's SSE bytes as text for an event parser, with what the body's end completes. */
export class SseText {
  private readonly decoder = new TextDecoder();
  private last = '';

  decode(chunk: Uint8Array): string {
    const text = this.decoder.decode(chunk, { stream: true });
    if (text !== '') this.last = text;
    return text;
  }

  /**
   * The text left when the body ended. A last event ended by a bare CR is held by a parser (a CR
   * may be half of a CRLF) until one more byte: the LF that completes that line end. Only then — a
   * stream cut anywhere else stays cut (an LF there could complete a half-sent event).
   */
  end(): string {
    const rest = this.decoder.decode();
    return (rest !== '' ? rest : this.last).endsWith('\r') ? `${rest}\n` : rest;
  }
}

/**
 * Relays an upstream SSE stream to the client through the translator, flushing each event.
 * The status line and headers are sent with the first frame that follows generated content (text,
 * reasoning, a tool call), together with the framing translated before it (message_start, the role
 * chunk): a supplier that fails before generating anything — an `overloaded_error` event right
 * after message_start, a `response.failed` — still yields a proper HTTP error, thrown to the
 * caller, which fails over to the next supplier. After the first byte a failure becomes the client
 * family's in-stream error event — never a silent clean end. At the end the call's totals follow
 * the last frame as a `: svc-totals` comment and as HTTP trailers (the translator has put them in
 * the family's own final usage event, where the protocol has one — held until now, streamClose,
 * when the supplier reported no usage and the gateway counted it).
 */
export async function streamToClient(
  reply: FastifyReply,
  upstream: UpstreamResponse,
  translator: Translator,
  relay: StreamRelay,
): Promise<StreamOutcome> {
  const { headers, charged, supplier } = relay;
  if (answeredJson(upstream))
    await refuseJsonForStream(upstream, relay.chunks, supplier, relay.protocol, relay.maxEventChars, relay.credential);
  const raw = reply.raw;
  let started = false;
  /** Framing translated before any content, sent with the first frame after it. */
  let held = '';
  let holdingSince: number | undefined;
  /** The client's closing frames once one was translated, and all after: sent with the stream's end (held-stream-end.ts). */
  let closing = '';
  const send = (text: string) => {
    if (closing === '' && !closesStream(text)) raw.write(text);
    else closing += text;
  };
  const start = () => {
    started = true;
    routingRecord(reply.request).firstByteMs = reply.elapsedTime;
    reply.hijack();
    // Totals (tokens, cost) are only known at the end: they follow as a comment and HTTP trailers.
    raw.writeHead(200, { ...headersSetSoFar(reply), ...streamHeadHeaders(reply.request.raw), ...headers() });
    if (held !== '') send(held);
    held = '';
  };
  const write = (text: string) => {
    if (text === '') return;
    if (!started) {
      holdingSince ??= performance.now();
      if (!relay.sawContent() && performance.now() - holdingSince < holdFramingMs) {
        held += text;
        return;
      }
      start();
    }
    send(text);
  };
  let failure: unknown;
  /** The upstream ended: the translator's closing frames (it throws when the answer is not whole). */
  const finish = () => {
    write(translator.streamEnd());
    if (!started) start(); // a complete stream that produced no frame is still a 200 stream
  };
  const parser = createParser({
    maxBufferSize: relay.maxEventChars,
    onError: (error) => {
      failure ??= parseFailure(error, supplier, relay.maxEventChars);
    },
    onEvent: (event: EventSourceMessage) => {
      if (failure) return;
      try {
        const text = readSupplierAnswer(supplier, () =>
          translator.streamEvent({ ...(event.event !== undefined && { event: event.event }), data: event.data }),
        );
        write(text);
      } catch (error) {
        failure = error;
      }
    },
  });
  /** The connection's own failure (reset, stall), if reading it broke off. */
  let broke: unknown;
  try {
    const text = new SseText();
    for await (const chunk of relay.chunks) {
      parser.feed(text.decode(chunk));
      if (failure) break;
      // A client that does not read holds the supplier back, not the gateway's memory.
      if (raw.writableNeedDrain) noteClientWait(reply, await drained(raw));
    }
    if (!failure) parser.feed(text.end());
  } catch (error) {
    broke = error;
  }
  if (!failure) {
    // A connection that breaks once the answer is whole (reset right after `[DONE]` or the
    // finish) lost nothing: the stream ends as it would have. Otherwise the break is the failure.
    try {
      finish();
    } catch (error) {
      failure = broke === undefined ? error : streamBreak(broke, supplier);
    }
  }
  if (failure) {
    upstream.body.destroy();
    // A supplier's error event may quote the credential it was sent: masked before it is relayed or logged.
    failure = errorWithoutCredential(toApiError(failure), relay.credential);
    const error = failure as ApiError;
    if (!started) throw failedBeforeFirstByte(error);
    if (!raw.destroyed) {
      raw.write(translator.streamError(error.afterOutput(), String(reply.request.id)));
      reply.request.streamErrorSent = true;
    }
  }
  if (started) {
    // Counting a usage the supplier left out takes a turn of the event loop: the client may leave meanwhile.
    const final = raw.destroyed ? undefined : await charged();
    const closeFailed = failure !== undefined;
    // Sent once the request's audit record is appended (held-stream-end.ts).
    holdStreamEnd(reply, () => {
      if (raw.destroyed) return void raw.end();
      // The closing frames, a final usage event the translator held for the charged usage, then the totals.
      raw.write(closeFailed ? closing : closing + (translator.streamClose?.(final) ?? ''));
      if (final) raw.write(totalsComment(final.totals));
      endStream(raw, reply.request.raw, totalsHeaders(final?.totals));
    });
  }
  return { started, error: failure ? toApiError(failure) : undefined };
}
