import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { createParser } from 'eventsource-parser';
import type { ModelRoute } from '../../../../core/config/index.js';
import { ApiError, toApiError } from '../../../../core/errors/index.js';
import { enforce, worstCaseUsd } from '../../enforcement/enforce.js';
import { requestBytes } from '../../http/request-bytes.js';
import { settleAndAudit } from '../../pipeline/accounting.js';
import { requireKey } from '../../auth/request-caller.js';
import type { GatewayDeps } from '../../deps.js';
import { RequestCancellation } from '../../http/cancellation.js';
import { noteUsage, routingRecord } from '../../pipeline/attempts.js';
import { tryCandidates } from '../../pipeline/failover.js';
import { orderCandidates } from '../../routing/order-candidates.js';
import { validateBody } from '../../http/validate.js';
import { callSupplier } from '../../pipeline/supplier-call.js';
import { pickCandidates } from '../../routing/candidates.js';
import type { TokenUsage } from '../../routing/cost.js';
import { routingHeaders, usageHeaders } from '../../routing/routing-headers.js';
import { nativeResponsesRequest } from './schema.js';

/** Events that end a Responses stream; the first carries the usage used for metering. */
const terminalEvents = new Set(['response.completed', 'response.incomplete', 'response.failed', 'error']);

interface ResponsesUsage {
  input_tokens?: number;
  output_tokens?: number;
  input_tokens_details?: { cached_tokens?: number };
}

/** Reads the terminal event's usage without touching the bytes that go to the client. */
class ResponsesMeter {
  usage: TokenUsage | undefined;
  terminal = false;
  private readonly decoder = new TextDecoder();
  private readonly parser = createParser({
    onEvent: (event) => {
      const name = event.event ?? '';
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

  feed(chunk: Buffer): void {
    this.parser.feed(this.decoder.decode(chunk, { stream: true }));
  }
}

/** The Responses API's standalone error event, appended when the upstream stream breaks. */
function responsesErrorFrame(error: ApiError): string {
  return `event: error\ndata: ${JSON.stringify({ type: 'error', code: error.code, message: error.message, param: null })}\n\n`;
}

async function nativeResponses(deps: GatewayDeps, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const key = requireKey(request);
  const body = validateBody(nativeResponsesRequest, request.body);
  const record = routingRecord(request);
  record.model = body.model;
  const compliant = pickCandidates(deps.catalogue, body.model, key, body.region, { protocols: ['openai-responses'], capability: 'chat' });
  const candidates = orderCandidates(compliant, { pinnedSupplier: null, isOpen: (s) => deps.health.isOpen(s), random: Math.random }).slice(0, deps.maxAttempts);
  const upstreamBody: Record<string, unknown> = { ...body };
  delete upstreamBody.region;
  const receivedAt = deps.clock();
  const maxOutput = typeof body.max_output_tokens === 'number' ? body.max_output_tokens : undefined;
  const reservation = await enforce(deps, key, worstCaseUsd(candidates, requestBytes(request), maxOutput, 4096), String(request.id));
  try {
    const value = await serveNative(deps, request, reply, body.model, candidates, upstreamBody);
    await settleAndAudit(deps, request, key, reservation, 'responses', receivedAt, undefined);
    return value;
  } catch (error) {
    await settleAndAudit(deps, request, key, reservation, 'responses', receivedAt, toApiError(error));
    throw error;
  }
}

/** Tries the candidates; failover covers the supplier's answer up to its status line, after that the bytes are the client's. */
function serveNative(
  deps: GatewayDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  model: string,
  candidates: readonly ModelRoute[],
  upstreamBody: Record<string, unknown>,
): Promise<unknown> {
  const record = routingRecord(request);
  return tryCandidates(request, candidates, new RequestCancellation(reply), deps.health, async (route, index, signal) => {
    const started = performance.now();
    const upstream = await callSupplier(
      deps.upstream,
      route,
      '/responses',
      { ...upstreamBody, model: route.model.upstream },
      { requestId: String(request.id), clientHeaders: request.headers },
      signal,
    );
    reply.hijack();
    const raw = reply.raw;
    raw.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
      'x-request-id': String(request.id),
      'x-svc-model': model,
      trailer: 'x-svc-input-tokens, x-svc-output-tokens, x-svc-cost-usd',
      ...routingHeaders(route, index > 0, performance.now() - started),
    });
    // Byte-for-byte passthrough (sequence numbers untouched); the meter only reads along.
    const meter = new ResponsesMeter();
    let lateError: ApiError | undefined;
    try {
      for await (const chunk of upstream.body) {
        raw.write(chunk);
        meter.feed(chunk as Buffer);
      }
      if (!meter.terminal) throw new ApiError('stream_interrupted', { details: { supplier: route.supplier.name } });
    } catch (error) {
      lateError = error instanceof ApiError ? error : new ApiError('stream_interrupted', { cause: error });
      if (!raw.destroyed) raw.write(responsesErrorFrame(lateError));
    }
    noteUsage(record, route, meter.usage);
    if (!raw.destroyed) raw.addTrailers(usageHeaders(route, meter.usage));
    raw.end();
    return { value: reply, lateError };
  });
}

/** `POST /v1/native/responses`: the native lane, untranslated, to `openai-responses` suppliers. */
export function registerNativeResponsesRoutes(app: FastifyInstance, deps: GatewayDeps): void {
  app.post('/v1/native/responses', (request, reply) => nativeResponses(deps, request, reply));
}
