import { sessionOf } from '../../routing/session-affinity.js';
import { forwardedMetadata, nativeSessionInputs } from '../../routing/session-inputs.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { createParser, type EventSourceParser } from 'eventsource-parser';
import type { ModelRoute } from '../../../../core/config/index.js';
import { ApiError } from '../../../../core/errors/index.js';
import type { GatewayDeps } from '../../deps.js';
import { worstCaseUsd } from '../../enforcement/enforce.js';
import type { AttemptSignal } from '../../http/cancellation.js';
import { requestBytes } from '../../http/request-bytes.js';
import { responsesInputCap } from '../../tokens/input-cap.js';
import { validateBody } from '../../http/validate.js';
import { answerHeaders, headersSetSoFar } from '../../pipeline/answer-headers.js';
import { routingRecord } from '../../pipeline/attempts.js';
import { noteChargedUsage } from '../../pipeline/charged-usage.js';
import type { AttemptResult } from '../../pipeline/failover.js';
import { serveRouted } from '../../pipeline/serve-routed.js';
import {
  endStream,
  holdFramingMs,
  parseFailure,
  noteClientWait,
  answeredJson,
  refuseJsonForStream,
  SseText,
  streamHeadHeaders,
} from '../../pipeline/stream-to-client.js';
import { holdStreamEnd } from '../../pipeline/held-stream-end.js';
import { drained } from '../../http/backpressure.js';
import { bodyChunks } from '../../http/body-chunks.js';
import { SseBoundary } from '../../http/sse-boundary.js';
import { responsesError } from '../../translate/shared/supplier-answers.js';
import { isJsonObject } from '../../translate/shared/safe-json.js';
import { callSupplier, sentCredential } from '../../pipeline/supplier-call.js';
import { errorWithoutCredential, eventsWithoutCredential } from '../../suppliers/upstream-error.js';
import { failedBeforeFirstByte, streamBreak, type UpstreamResponse } from '../../http/upstream-client.js';
import { abandonBody } from '../../http/bounded-body.js';
import { fallbackMaxTokens, inputTokenLimit, outputTokenLimit, type TokenUsage } from '../../routing/cost.js';
import { totalsHeaders, usageTotals } from '../../routing/routing-headers.js';
import { responsesItems } from '../../tokens/responses-items.js';
import { AnswerTally } from '../../translate/answer-tally.js';
import { totalsComment } from '../../translate/shared/sse-frames.js';
import { responsesStreamErrorFrame } from '../../translate/shared/stream-errors.js';
import { nativeResponsesRequest, type NativeResponsesRequest } from './schema.js';

// A Responses stream's events before the model generates content (`response.created`,
// `in_progress`, `output_item.added`, … — content as the translated lanes judge it, through the
// answer tally) are held back, for at most `holdFramingMs` or `heldOpeningBytes`: a supplier whose
// stream fails before any content has generated nothing, so the client gets an HTTP error and the
// next supplier is tried, as on the translated lanes (holdPreamble below).

/** Events that say the response failed. Before any content, what they carry is the attempt's error. */
const failureEvents = new Set(['response.failed', 'error']);
/** Events that end a response that did not fail (one may hold no content at all). */
const finishedEvents = new Set(['response.completed', 'response.incomplete']);
/**
 * Held opening bytes past which the stream is sent anyway (a supplier repeating in_progress):
 * `response.created` and `in_progress` each repeat the request's instructions and tools, so the
 * bound grows with the request.
 */
const heldOpeningBytes = (requestBytes: number) => 64 * 1024 + 2 * requestBytes;

/** Events that end a Responses stream; the first carries the usage used for metering. */
const terminalEvents = new Set(['response.completed', 'response.incomplete', 'response.failed', 'error']);

interface ResponsesUsage {
  input_tokens?: number;
  output_tokens?: number;
  input_tokens_details?: { cached_tokens?: number };
}

/** Reads the terminal event's usage without touching the bytes that go to the client, keeping each event for the tally. */
class ResponsesMeter {
  usage: TokenUsage | undefined;
  terminal = false;
  /** A response ended without failing (content or not). */
  private finished = false;
  /** The supplier's own error, when its stream failed before generating anything (`response.failed`, `error`). */
  failedEarly: ApiError | undefined;
  /** A failure event (`response.failed`, `error`) was read: what is relayed from then on is masked (`eventsWithoutCredential`). */
  sawFailure = false;
  /** Events read so far: the sequence_number an error event of the gateway's own takes (they count from 0). */
  events = 0;
  /** The supplier's stream broke the parser's bound (one event past maxEventChars): the stream stops. */
  private oversized: ApiError | undefined;
  private readonly parser: EventSourceParser;
  constructor(
    private readonly tally: AnswerTally,
    private readonly supplier: string,
    private readonly maxEventChars: number,
  ) {
    this.parser = createParser({
      maxBufferSize: this.maxEventChars,
      onError: (error) => {
        this.oversized ??= parseFailure(error, this.supplier, this.maxEventChars);
      },
      onEvent: (event) => {
        this.events++;
        this.tally.sawEvent(event.data);
        const name = event.event ?? '';
        if (failureEvents.has(name)) this.sawFailure = true;
        if (finishedEvents.has(name)) this.finished = true;
        else if (failureEvents.has(name) && this.failedEarly === undefined && !this.generating) this.failedEarly = failureOf(event.data);
        if (!terminalEvents.has(name)) return;
        this.terminal = true;
        try {
          const usage = (JSON.parse(event.data) as { response?: { usage?: ResponsesUsage } }).response?.usage;
          if (usage) {
            this.usage = {
              inputTokens: usage.input_tokens ?? 0,
              outputTokens: usage.output_tokens ?? 0,
              cachedInputTokens: usage.input_tokens_details?.cached_tokens ?? 0,
            };
          }
        } catch {
          // A terminal event that is not JSON still ends the stream; it just has no usage.
        }
      },
    });
  }

  /** The supplier generated content (text, reasoning, a tool call), or finished without failing. */
  get generating(): boolean {
    return this.finished || this.tally.sawContent();
  }

  private readonly text = new SseText();
  /** Reads a chunk along; throws the supplier's failure once one event outgrew the bound. */
  feed(chunk: Buffer): void {
    if (this.oversized === undefined) this.parser.feed(this.text.decode(chunk));
    if (this.oversized !== undefined) throw this.oversized;
  }

  /** The body ended: a last event it completes (one ended by a bare CR) is read now. */
  end(): void {
    if (this.oversized === undefined) this.parser.feed(this.text.end());
  }
}

/** The native lane: validated, then the shared pipeline with a byte-passthrough attempt. */
function nativeResponses(deps: GatewayDeps, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const body = validateBody(nativeResponsesRequest, request.body);
  const upstreamBody: Record<string, unknown> = { ...body };
  delete upstreamBody.region;
  // The gateway's own metadata keys stay here, as on the chat lanes (docs/interfaces.md).
  const metadata = body.metadata;
  if (metadata !== null && typeof metadata === 'object') {
    const kept = forwardedMetadata(metadata as Record<string, unknown>);
    if (kept) upstreamBody.metadata = kept;
    else delete upstreamBody.metadata;
  }
  const maxOutput = typeof body.max_output_tokens === 'number' ? body.max_output_tokens : undefined;
  const bodyBytes = requestBytes(request);
  const inputCap = responsesInputCap(body, bodyBytes);
  return serveRouted(deps, request, reply, {
    interfaceName: 'responses',
    model: body.model,
    region: body.region,
    needs: { protocols: ['openai-responses'], capability: 'chat' },
    session: sessionOf(nativeSessionInputs(request.raw, body.metadata)),
    worstCaseUsd: (compliant) => worstCaseUsd(compliant, inputCap, maxOutput, fallbackMaxTokens),
    attempt: (route, _index, signal) =>
      relayResponses(deps, request, reply, route, signal, {
        body,
        upstreamBody,
        maxOutput,
        inputCap,
        holdBytes: heldOpeningBytes(bodyBytes),
      }),
  });
}

/** One native request, as each attempt relays it. */
interface NativeCall {
  body: NativeResponsesRequest;
  upstreamBody: Record<string, unknown>;
  /** The client's `max_output_tokens`, if it set one. */
  maxOutput: number | undefined;
  /** The most input tokens the request can amount to (tokens/input-cap.ts); none: the context window. */
  inputCap: number | undefined;
  /** The most opening bytes held before the stream is sent anyway (`heldOpeningBytes`). */
  holdBytes: number;
}

/** One attempt: failover covers the supplier's answer up to its status line, after that the bytes are the client's. */
async function relayResponses(
  deps: GatewayDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  route: ModelRoute,
  signal: AttemptSignal,
  { body, upstreamBody, maxOutput, inputCap, holdBytes }: NativeCall,
): Promise<AttemptResult<unknown>> {
  const record = routingRecord(request);
  const started = performance.now();
  const upstream = await callSupplier(
    deps.upstream,
    route,
    '/responses',
    { ...upstreamBody, model: route.model.upstream },
    { requestId: String(request.id), clientHeaders: request.headers },
    signal,
  );
  // Before the status line is the client's: a JSON document is no stream, and the next supplier is tried.
  const chunks = bodyChunks(upstream.body);
  const credential = sentCredential(route, signal);
  if (answeredJson(upstream))
    await refuseJsonForStream(upstream, chunks, route.supplier.name, route.supplier.protocol, deps.upstream.answerLimitBytes, credential);
  const outputStop = outputTokenLimit(route.model, { outputCap: maxOutput });
  const tally = new AnswerTally('openai-responses', { outputTokens: outputStop, supplier: route.supplier.name });
  const meter = new ResponsesMeter(tally, route.supplier.name, deps.upstream.answerLimitBytes);
  const held = await holdPreamble(chunks, meter, upstream, route.supplier.name, holdBytes, credential);
  record.firstByteMs = reply.elapsedTime;
  reply.hijack();
  const raw = reply.raw;
  raw.writeHead(200, {
    ...headersSetSoFar(reply),
    ...streamHeadHeaders(request.raw),
    ...answerHeaders(reply, route, body.model, started),
  });
  // Byte-for-byte passthrough (sequence numbers untouched); the meter only reads along.
  let lateError: ApiError | undefined;
  // From the chunk that carried the terminal event (response.completed and its kin: the meter has
  // read it before it is relayed) the bytes wait for the request's audit record, and leave with the
  // stream's end (pipeline/held-stream-end.ts).
  const closing: Buffer[] = [];
  const send = (bytes: Buffer) => {
    if (closing.length === 0 && !meter.terminal) raw.write(bytes);
    else closing.push(bytes);
  };
  try {
    // Whole events only: a supplier that breaks off mid-event leaves no half event before the error event.
    const boundary = new SseBoundary();
    // The supplier's error events may quote the credential it was sent: from the first one on (the
    // meter reads each chunk before it is relayed), the events are masked; until then they go as sent.
    const relay = (chunk: Buffer) => {
      const whole = boundary.take(chunk);
      if (whole.length > 0) send(meter.sawFailure ? eventsWithoutCredential(whole, credential) : whole);
    };
    for (const chunk of held) relay(chunk);
    for (let next = await chunks.next(); !next.done; next = await chunks.next()) {
      meter.feed(next.value);
      relay(next.value);
      // A client that does not read holds the supplier back, not the gateway's memory.
      if (raw.writableNeedDrain) noteClientWait(reply, await drained(raw));
    }
    meter.end();
    if (!meter.terminal) throw new ApiError('stream_interrupted', { details: { supplier: route.supplier.name } });
    // The stream ended whole: bytes after its last blank line (a last event left unclosed) go on as sent.
    const rest = boundary.rest();
    if (rest.length > 0) send(meter.sawFailure ? eventsWithoutCredential(rest, credential) : rest);
  } catch (error) {
    abandonBody(upstream);
    lateError = errorWithoutCredential(streamBreak(error, route.supplier.name), credential);
    if (!raw.destroyed) {
      raw.write(responsesStreamErrorFrame(lateError.afterOutput(), String(request.id), meter.events));
      request.streamErrorSent = true;
    }
  }
  await noteChargedUsage(
    record,
    route,
    meter.usage,
    {
      input: () => responsesItems(body),
      inputBound: inputTokenLimit(route.model, inputCap),
      output: () => tally.items(),
      outputBound: maxOutput ?? route.model.maxOutputTokens ?? fallbackMaxTokens,
      outputStop,
    },
    request,
    { outputCap: maxOutput, inputCap },
  );
  // Sent once the request's audit record is appended (pipeline/held-stream-end.ts).
  holdStreamEnd(reply, () => {
    if (raw.destroyed) return void raw.end();
    for (const bytes of closing) raw.write(bytes);
    // The totals after the last event, as on every stream (a comment SSE parsers skip), and as trailers.
    const totals = usageTotals(route, record.usage);
    if (totals) raw.write(totalsComment(totals));
    endStream(raw, request.raw, totalsHeaders(totals));
  });
  return { value: reply, lateError };
}

/**
 * Reads the stream's opening events until the supplier generates something, and returns them
 * unsent. A stream that fails before that — its own `response.failed` or `error` event, or a body
 * that ends or breaks — is the supplier's failure before any byte reached the client: it is thrown
 * (the body let go of), classified as on the translated lanes, and the next supplier is tried when
 * it is the supplier's fault. Held for at most `holdFramingMs` (checked as events arrive, as there) or `maxBytes`.
 */
async function holdPreamble(
  chunks: AsyncIterator<Buffer>,
  meter: ResponsesMeter,
  upstream: UpstreamResponse,
  supplier: string,
  maxBytes: number,
  credential: string | undefined,
): Promise<Buffer[]> {
  const held: Buffer[] = [];
  const since = performance.now();
  let bytes = 0;
  try {
    while (!meter.generating && meter.failedEarly === undefined && bytes < maxBytes && performance.now() - since < holdFramingMs) {
      const next = await chunks.next();
      if (next.done) {
        meter.end();
        if (!meter.generating && meter.failedEarly === undefined)
          throw new ApiError('stream_interrupted', {
            humanMessage: `Supplier ${supplier} ended its stream before generating anything`,
            details: { supplier },
          });
        break;
      }
      held.push(next.value);
      bytes += next.value.length;
      meter.feed(next.value);
    }
  } catch (error) {
    abandonBody(upstream);
    throw failedBeforeFirstByte(streamBreak(error, supplier));
  }
  if (meter.failedEarly === undefined) return held;
  abandonBody(upstream);
  throw errorWithoutCredential(meter.failedEarly, credential);
}

/** The error a `response.failed` or `error` event carries (`{response: {error}}`, `{error}` or the event itself). */
function failureOf(data: string): ApiError {
  let payload: unknown;
  try {
    payload = JSON.parse(data);
  } catch {
    payload = undefined;
  }
  const event = isJsonObject(payload) ? payload : {};
  const error = isJsonObject(event.response) ? event.response.error : isJsonObject(event.error) ? event.error : event;
  return responsesError(error);
}

/** `POST /v1/native/responses`: the native lane, untranslated, to `openai-responses` suppliers. */
export function registerNativeResponsesRoutes(app: FastifyInstance, deps: GatewayDeps): void {
  app.post('/v1/native/responses', (request, reply) => nativeResponses(deps, request, reply));
}
