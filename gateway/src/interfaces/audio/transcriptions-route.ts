import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { readBoundedText } from '../../http/bounded-body.js';
import { ApiError } from '../../../../core/errors/index.js';
import type { GatewayDeps } from '../../deps.js';
import { answerHeaders } from '../../pipeline/answer-headers.js';
import { noteUsage, routingRecord } from '../../pipeline/attempts.js';
import type { Attempt } from '../../pipeline/failover.js';
import { serveRouted } from '../../pipeline/serve-routed.js';
import { callSupplier, RawRequestBody } from '../../pipeline/supplier-call.js';
import type { MediaUsage, TokenUsage } from '../../routing/cost.js';
import { usageHeaders } from '../../routing/routing-headers.js';
import { maxPrice } from '../../routing/worst-case.js';
import { wavSeconds } from './formats.js';
import { languageCodes } from './languages.js';
import { multipartBody, type MultipartBody } from './multipart-body.js';
import { maxUploadBytes, readAudioUpload, refuseDeclaredSize, type AudioFile, type FormField } from './upload.js';
import { modelIdField } from '../../http/validate.js';

/** The model used when the form names none (docs/spec-conformance.md 4.8: default `whisper`). */
export const defaultTranscriptionModel = 'whisper';
const responseFormats = new Set(['json', 'text', 'srt', 'verbose_json', 'vtt']);
/**
 * Bitrates bounding a file's duration: the reservation assumes the lowest plausible one
 * (8 kbit/s) for every format — a WAV header is the client's claim, so it does not lower the
 * reservation. The settlement, when the supplier reports no duration, uses the WAV header
 * (byte rate bounded to what PCM can be) or, for compressed formats, a typical 128 kbit/s.
 */
const floorBytesPerSecond = 1_000;
const typicalBytesPerSecond = 16_000;

/** The validated form: public model, region, and the fields to forward (model id replaced per route). */
interface TranscriptionForm {
  model: string;
  region: string | undefined;
  responseFormat: string;
  forwarded: FormField[];
}

/** Fields OpenAI's form takes several times, with or without `[]` after the name (curl sends both). */
const listFields = new Set(['timestamp_granularities', 'include']);

/**
 * Checks the form's fields. A field appears once, but for list fields (`timestamp_granularities[]`),
 * which are forwarded as they came: a repeated `response_format` read one way here and another way
 * by the supplier would bill and answer two different requests. `model` and `region` are the
 * gateway's; `language` goes upstream normalised to lower case.
 */
function readForm(fields: readonly FormField[]): TranscriptionForm {
  const seen = new Set<string>();
  for (const [name] of fields) {
    if (seen.has(name) && !listFields.has(name.replace(/\[\]$/, '')))
      throw new ApiError('validation_error', { param: name, humanMessage: `The "${name}" field is given more than once` });
    seen.add(name);
  }
  const last = (name: string) => fields.findLast(([n]) => n === name)?.[1];
  const model = last('model') || defaultTranscriptionModel;
  const modelCheck = modelIdField.safeParse(model);
  if (!modelCheck.success)
    throw new ApiError('validation_error', { param: 'model', humanMessage: `model ${modelCheck.error.issues[0]!.message}` });
  const region = last('region') || undefined;
  const language = last('language');
  let code: string | undefined;
  if (language !== undefined) {
    code = language.trim().toLowerCase();
    if (!languageCodes.has(code)) {
      throw new ApiError('validation_error', {
        param: 'language',
        humanMessage: `"${language}" is not an ISO-639-1 language code such as en, de or ja`,
      });
    }
  }
  readStream(last('stream'));
  const forwarded: FormField[] = fields.filter(([n]) => n !== 'model' && n !== 'region' && n !== 'language' && n !== 'stream');
  if (code !== undefined) forwarded.push(['language', code]);
  const responseFormat = last('response_format') ?? 'json';
  if (!responseFormats.has(responseFormat)) {
    throw new ApiError('validation_error', {
      param: 'response_format',
      humanMessage: `response_format must be one of ${[...responseFormats].join(', ')}`,
    });
  }
  const temperature = last('temperature');
  if (temperature !== undefined && !(Number(temperature) >= 0 && Number(temperature) <= 1)) {
    throw new ApiError('validation_error', { param: 'temperature', humanMessage: 'temperature must be a number from 0 to 1' });
  }
  return { model, region, responseFormat, forwarded };
}

/**
 * The form's `stream` field: `false` (the default, not forwarded) or a refusal. A streamed
 * transcription (`stream=true`, OpenAI's `transcript.text.delta` events) is not offered: answering
 * it with plain JSON would leave an SDK's stream empty without an error, so it is refused.
 */
function readStream(stream: string | undefined): void {
  if (stream === undefined) return;
  const value = stream.trim().toLowerCase();
  if (value === 'false') return;
  if (value === 'true') {
    throw new ApiError('unsupported_parameter', {
      param: 'stream',
      humanMessage: 'Streamed transcription (stream=true) is not offered by this gateway; send stream=false or leave it out',
    });
  }
  throw new ApiError('validation_error', { param: 'stream', humanMessage: 'stream must be true or false' });
}

/** What a supplier's transcription answer says it consumed (OpenAI: `usage` by duration or tokens; `duration` in verbose_json). */
function reportedUsage(json: Record<string, unknown>): { tokens?: TokenUsage; seconds?: number } {
  const usage = json.usage as { type?: unknown; seconds?: unknown; input_tokens?: unknown; output_tokens?: unknown } | undefined;
  if (usage?.type === 'duration' && typeof usage.seconds === 'number') return { seconds: usage.seconds };
  if (usage?.type === 'tokens' && typeof usage.input_tokens === 'number') {
    return {
      tokens: {
        inputTokens: usage.input_tokens,
        outputTokens: typeof usage.output_tokens === 'number' ? usage.output_tokens : 0,
        cachedInputTokens: 0,
      },
    };
  }
  if (typeof json.duration === 'number') return { seconds: json.duration };
  return {};
}

/**
 * Ceilings of what one second of audio can be billed in tokens by a token-priced model: well above
 * OpenAI's audio input (about 10 tokens a second) and a fast speaker's transcript.
 */
const audioInputTokensPerSecond = 25;
const transcriptTokensPerSecond = 10;

/**
 * The most a file can be charged: its duration at the lowest plausible bitrate, and the tokens
 * that duration can be. The reservation is made for these, and a supplier reporting more (20,000
 * seconds for 20 KB) is charged these — a wallet or budget is never overspent by a report.
 */
function transcriptionBounds(bytes: number): { seconds: number; inputTokens: number; outputTokens: number } {
  const seconds = bytes / floorBytesPerSecond;
  return {
    seconds,
    inputTokens: Math.ceil(seconds * audioInputTokensPerSecond),
    outputTokens: Math.ceil(seconds * transcriptTokensPerSecond),
  };
}

/** A reported amount within [0, bound] (a negative or absurd report is not a refund or a fortune). */
const within = (value: number, bound: number): number => (Number.isFinite(value) ? Math.min(Math.max(value, 0), bound) : 0);

/** What the call is charged: the supplier's report within the file's bounds, or the estimate when it reports nothing. */
function transcriptionCharge(
  reported: { tokens?: TokenUsage; seconds?: number },
  file: AudioFile,
): { tokens?: TokenUsage; media: MediaUsage; capped: boolean } {
  const bounds = transcriptionBounds(file.bytes);
  if (reported.tokens) {
    const tokens: TokenUsage = {
      inputTokens: Math.floor(within(reported.tokens.inputTokens, bounds.inputTokens)),
      outputTokens: Math.floor(within(reported.tokens.outputTokens, bounds.outputTokens)),
      cachedInputTokens: 0,
    };
    const capped = tokens.inputTokens !== reported.tokens.inputTokens || tokens.outputTokens !== reported.tokens.outputTokens;
    return { tokens, media: { audioSeconds: 0 }, capped };
  }
  const seconds = reported.seconds ?? estimatedSeconds(file);
  const audioSeconds = within(seconds, bounds.seconds);
  return { media: { audioSeconds }, capped: audioSeconds !== seconds };
}

/** The duration to bill when the supplier reports none. */
function estimatedSeconds(file: AudioFile): number {
  return (file.format === 'wav' ? wavSeconds(file.head, file.bytes) : undefined) ?? file.bytes / typicalBytesPerSecond;
}

function transcriptionAttempt(
  deps: GatewayDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  form: TranscriptionForm,
  file: AudioFile,
): Attempt<unknown> {
  return async (route, _index, signal) => {
    const fields: FormField[] = [['model', route.model.upstream], ...form.forwarded];
    const body: MultipartBody = multipartBody(fields, file);
    const started = performance.now();
    const upstream = await callSupplier(
      deps.upstream,
      route,
      '/audio/transcriptions',
      new RawRequestBody(body.contentType, body.open(), body.length),
      { requestId: String(request.id), clientHeaders: request.headers },
      signal,
    );
    const text = await readBoundedText(upstream, deps.upstream.answerLimitBytes, route.supplier.name);
    let answer: unknown = text;
    let reported: { tokens?: TokenUsage; seconds?: number } = {};
    if (form.responseFormat === 'json' || form.responseFormat === 'verbose_json') {
      try {
        answer = JSON.parse(text);
      } catch (cause) {
        throw new ApiError('non_json_provider_response', { cause, details: { supplier: route.supplier.name } });
      }
      if (typeof (answer as { text?: unknown } | null)?.text !== 'string') {
        throw new ApiError('upstream_invalid_response', {
          humanMessage: `Supplier ${route.supplier.name} returned a transcription without text`,
          details: { supplier: route.supplier.name },
        });
      }
      reported = reportedUsage(answer as Record<string, unknown>);
    } else {
      void reply.type('text/plain; charset=utf-8');
    }
    const charged = transcriptionCharge(reported, file);
    const record = routingRecord(request);
    noteUsage(record, route, charged.tokens, charged.media);
    // What the supplier over-reported, for the request log (not the gateway's own estimate, capped too).
    if (charged.capped && (reported.tokens !== undefined || reported.seconds !== undefined))
      record.usageCapped = {
        inputTokens: reported.tokens?.inputTokens ?? 0,
        outputTokens: reported.tokens?.outputTokens ?? 0,
        ...(reported.seconds !== undefined && { audioSeconds: reported.seconds }),
      };
    void reply.headers({ ...answerHeaders(reply, route, form.model, started), ...usageHeaders(route, charged.tokens, charged.media) });
    return { value: answer };
  };
}

/** `POST /v1/audio/transcriptions`: the upload is read (streamed to disk, checked), then the shared pipeline. */
async function serveTranscription(deps: GatewayDeps, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  if (!request.isMultipart) {
    throw new ApiError('unsupported_media_type', { humanMessage: 'Send the audio as multipart/form-data with a "file" field' });
  }
  const refused = refuseDeclaredSize(request.raw);
  // Answered before the body is read; the connection is then closed after a bounded drain
  // (closeAfterEarlyAnswer), so the client reads this answer rather than a reset.
  if (refused) throw refused;
  const upload = await readAudioUpload(request.raw, deps.uploadIdleMs);
  try {
    const form = readForm(upload.fields);
    const bounds = transcriptionBounds(upload.file.bytes);
    return await serveRouted(deps, request, reply, {
      interfaceName: 'audio.transcriptions',
      model: form.model,
      region: form.region,
      needs: { protocols: ['openai'], capability: 'transcription' },
      worstCaseUsd: (compliant) =>
        (bounds.seconds / 60) * maxPrice(compliant, (r) => r.model.usdPerAudioMinute) +
        (bounds.inputTokens * maxPrice(compliant, (r) => r.model.inputUsdPerMtok) +
          bounds.outputTokens * maxPrice(compliant, (r) => r.model.outputUsdPerMtok)) /
          1e6,
      attempt: transcriptionAttempt(deps, request, reply, form, upload.file),
    });
  } finally {
    await upload.discard();
  }
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the audio scope's multipart parser: the body is left unread for streaming. */
    isMultipart?: boolean;
  }
}

/**
 * Registers `POST /v1/audio/transcriptions` in its own scope, whose multipart parser leaves the
 * body unread so the route can stream it (other routes keep rejecting multipart bodies); any other
 * body is left unread as well, for the route's 415.
 */
export function registerTranscriptionRoutes(app: FastifyInstance, deps: GatewayDeps): void {
  void app.register(async (scope) => {
    // Only the multipart parser: a body of any other type (JSON, raw audio, no Content-Type) is
    // left unread too, so the route answers its own 415 rather than the JSON parser's invalid_json.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('multipart/form-data', (request, _payload, done) => {
      request.isMultipart = true;
      done(null, undefined);
    });
    scope.addContentTypeParser('*', (_request, _payload, done) => done(null, undefined));
    // The upload is streamed, not parsed by fastify, so its bound is the upload's own, not bodyLimit:
    // an `Expect: 100-continue` upload within it is invited (http/expect-continue.ts).
    scope.post('/v1/audio/transcriptions', { config: { invitedBodyBytes: maxUploadBytes } }, (request, reply) =>
      serveTranscription(deps, request, reply),
    );
  });
}
