import { pipeline } from 'node:stream/promises';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../../../../core/errors/index.js';
import type { GatewayDeps } from '../../deps.js';
import { validateBody } from '../../http/validate.js';
import { answerHeaders, headersSetSoFar } from '../../pipeline/answer-headers.js';
import { noteUsage, routingRecord } from '../../pipeline/attempts.js';
import type { Attempt } from '../../pipeline/failover.js';
import { serveRouted } from '../../pipeline/serve-routed.js';
import { callSupplier } from '../../pipeline/supplier-call.js';
import type { MediaUsage } from '../../routing/cost.js';
import { usageHeaders } from '../../routing/routing-headers.js';
import { maxPrice } from '../../routing/worst-case.js';
import { maxSpeechCharacters, speechRequest, type SpeechRequest } from './speech-schema.js';

/** The Content-Type of each output format (docs/spec-conformance.md 4.9). */
const audioTypes = { mp3: 'audio/mpeg', wav: 'audio/wav' } as const;

/** Characters as people count them: Unicode code points, not UTF-16 units (an emoji is one). */
function characterCount(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}

function speechAttempt(
  deps: GatewayDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  body: SpeechRequest,
  media: MediaUsage,
): Attempt<unknown> {
  const format = body.response_format ?? 'mp3';
  const { region: _region, ...forwarded } = body;
  return async (route, _index, signal) => {
    const voice = body.voice ?? route.model.defaultVoice;
    const started = performance.now();
    const upstream = await callSupplier(
      deps.upstream,
      route,
      '/audio/speech',
      { ...forwarded, model: route.model.upstream, response_format: format, ...(voice !== undefined && { voice }) },
      { requestId: String(request.id), clientHeaders: request.headers },
      signal,
    );
    const record = routingRecord(request);
    noteUsage(record, route, undefined, media);
    record.firstByteMs = reply.elapsedTime;
    // Audio goes to the client as the supplier produces it; the cost is known up front (characters).
    reply.hijack();
    const raw = reply.raw;
    raw.writeHead(200, {
      ...headersSetSoFar(reply),
      'content-type': audioTypes[format],
      ...answerHeaders(reply, route, body.model, started),
      ...usageHeaders(route, undefined, media),
    });
    let lateError: ApiError | undefined;
    try {
      // Backpressure both ways; a supplier failure destroys the response: binary audio has no
      // in-band error, so a cut connection (no final chunk) is the honest signal.
      // Ended here, not by the pipeline: the response's 'finish' (which records the request's
      // metrics) must come after the attempt is recorded, as for chat streams; ended by the
      // pipeline it came first, and speech was counted against supplier "none".
      await pipeline(upstream.body, raw, { end: false });
      raw.end();
    } catch (cause) {
      // Binary audio has no in-band error: the cut connection (no final chunk) is the signal.
      raw.destroy();
      lateError = new ApiError('stream_interrupted', { cause, details: { supplier: route.supplier.name } });
    }
    return { value: reply, lateError };
  };
}

/** `POST /v1/audio/speech` through the shared pipeline, audio streamed to the client. */
function serveSpeech(deps: GatewayDeps, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const body = validateBody(speechRequest, request.body);
  const characters = characterCount(body.input);
  if (characters > maxSpeechCharacters) {
    throw new ApiError('validation_error', {
      param: 'input',
      humanMessage: `input has ${characters} characters; at most ${maxSpeechCharacters} can be spoken in one request`,
      details: { characters, limit: maxSpeechCharacters },
    });
  }
  const media: MediaUsage = { characters };
  return serveRouted(deps, request, reply, {
    interfaceName: 'audio.speech',
    model: body.model,
    region: body.region,
    needs: { protocols: ['openai'], capability: 'speech' },
    worstCaseUsd: (compliant) => (characters * maxPrice(compliant, (r) => r.model.usdPerMchar)) / 1e6,
    attempt: speechAttempt(deps, request, reply, body, media),
  });
}

/** Registers `POST /v1/audio/speech`. */
export function registerSpeechRoutes(app: FastifyInstance, deps: GatewayDeps): void {
  app.post('/v1/audio/speech', (request, reply) => serveSpeech(deps, request, reply));
}
