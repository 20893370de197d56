import { setTimeout as delay } from 'node:timers/promises';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ModelCapability, ModelRoute } from '../../../core/config/index.js';
import { requireKey } from '../auth/request-caller.js';
import type { GatewayDeps } from '../deps.js';
import { bodyChunks } from '../http/body-chunks.js';
import { worstCaseUsd } from '../enforcement/enforce.js';
import { autoModel, resolveAutoModel } from '../routing/auto-model.js';
import { fallbackMaxTokens, inputTokenLimit, outputTokenLimit } from '../routing/cost.js';
import { usageHeaders, usageTotals } from '../routing/routing-headers.js';
import { sessionOf, type SessionInputs } from '../routing/session-affinity.js';
import { chatProtocols, createTranslator, type ClientRequest } from '../translate/factory.js';
import { AnswerTally } from '../translate/answer-tally.js';
import { chatItems } from '../tokens/chat-items.js';
import { countTokensSliced, messagesItems } from '../tokens/count.js';
import { answerHeaders } from './answer-headers.js';
import { noteChargedUsage } from './charged-usage.js';
import { routingRecord, type InterfaceName } from './attempts.js';
import { serveRouted } from './serve-routed.js';
import { callSupplier, sentCredential } from './supplier-call.js';
import { errorWithoutCredential } from '../suppliers/upstream-error.js';
import { streamToClient } from './stream-to-client.js';
import { readJson, readSupplierAnswer } from './upstream-json.js';
import { withChargedUsage } from '../translate/shared/usage.js';

/** The longest an Anthropic stream waits, once its supplier answered, for the count of its input (message_start). */
const countWaitMs = 100;

/** A chat-style request of either family, ready to route. */
export interface ChatInference {
  client: ClientRequest;
  model: string;
  region: string | undefined;
  stream: boolean;
  /** Capabilities beyond `chat` this request needs (tools, vision); only computed for `auto`. */
  needs: () => readonly ModelCapability[];
  session: SessionInputs;
  /** The request's size in UTF-8 bytes (a rough prompt size for `auto`). */
  inputBytes: number;
  /** The most input tokens the request can amount to (tokens/input-cap.ts); none: the context window. */
  inputCap: number | undefined;
  /** The client's output cap, if it set one: per answer. */
  maxOutputTokens: number | undefined;
  /** How many answers the client asked for (OpenAI's `n`; 1 otherwise): the output bounds are per answer. */
  choices: number;
  interfaceName: InterfaceName;
}

/**
 * One chat request through the gateway, for both client families: resolve `auto`, then the
 * shared pipeline (serveRouted) with a chat attempt — translate, call, answer (JSON or stream)
 * with routing headers. The worst case is taken over every compliant route, since any of them
 * may end up answering.
 */
export function serveChat(deps: GatewayDeps, request: FastifyRequest, reply: FastifyReply, inference: ChatInference): Promise<unknown> {
  const key = requireKey(request);
  const record = routingRecord(request);
  const publicModel =
    inference.model === autoModel
      ? resolveAutoModel(deps.catalogue, key, {
          capabilities: ['chat', ...inference.needs()],
          // ~4 bytes per token: a rough size is all the context-window check needs.
          promptTokens: Math.ceil(inference.inputBytes / 4),
          region: inference.region,
          protocols: chatProtocols,
        })
      : inference.model;
  if (inference.model === autoModel) record.autoRouted = true;
  // An Anthropic stream served by a supplier of another protocol reports its input tokens in
  // message_start, before that supplier's usage arrives (at the end): counted once, in the counter
  // thread, while the supplier is being called, and waited for — at most `countWaitMs` — once it
  // answered. A count that fails or is late leaves 0, as before; what is charged is the supplier's.
  let countedInput: number | undefined;
  let counting: Promise<void> | undefined;
  const countInput = (route: ModelRoute) => {
    if (inference.client.family !== 'anthropic') return;
    const body = inference.client.body;
    try {
      counting ??= countTokensSliced(messagesItems(body), inputTokenLimit(route.model, inference.inputCap)).then(
        (tokens) => void (countedInput = tokens),
        () => undefined,
      );
    } catch {
      counting = Promise.resolve(); // listing the items failed: message_start reports 0, the call goes on
    }
  };
  const inputCounted = (pending: Promise<void>) => Promise.race([pending, delay(countWaitMs, undefined, { ref: false })]);
  return serveRouted(deps, request, reply, {
    interfaceName: inference.interfaceName,
    model: publicModel,
    region: inference.region,
    needs: { protocols: chatProtocols, capability: 'chat' },
    session: sessionOf(inference.session),
    worstCaseUsd: (compliant) =>
      worstCaseUsd(compliant, inference.inputCap, inference.maxOutputTokens, fallbackMaxTokens, inference.choices),
    attempt: async (route, _index, signal) => {
      const outputStop = outputTokenLimit(route.model, { outputCap: inference.maxOutputTokens, choices: inference.choices });
      const tally = new AnswerTally('openai-chat', { outputTokens: outputStop, supplier: route.supplier.name });
      const countsInput = inference.stream && inference.client.family === 'anthropic' && route.supplier.protocol !== 'anthropic';
      if (countsInput) countInput(route);
      const translator = createTranslator(
        inference.client,
        route.supplier.protocol,
        {
          route,
          publicModel,
          defaultMaxTokens: route.model.maxOutputTokens ?? fallbackMaxTokens,
          outputCap: inference.maxOutputTokens,
          choices: inference.choices,
          inputCap: inference.inputCap,
          countedInputTokens: () => countedInput,
        },
        tally,
      );
      const call = translator.request();
      const started = performance.now();
      const upstream = await callSupplier(
        deps.upstream,
        route,
        call.path,
        call.body,
        { requestId: String(request.id), clientHeaders: request.headers },
        signal,
      );
      // Only there is anything awaited: the other lanes (and a failover to an Anthropic supplier) take no extra turn.
      // The stream is read from now on, so frames that come with a cut during the wait are kept.
      const chunks = inference.stream ? bodyChunks(upstream.body) : undefined;
      if (countsInput && counting !== undefined) await inputCounted(counting);
      const headers = () => answerHeaders(reply, route, publicModel, started);
      // What is charged: the supplier's usage, or the gateway's own count where it gave none; once per call.
      let charged: Promise<void> | undefined;
      const charge = () =>
        (charged ??= noteChargedUsage(
          record,
          route,
          translator.usage(),
          {
            input: () => (inference.client.family === 'openai' ? chatItems(inference.client.body) : messagesItems(inference.client.body)),
            inputBound: inputTokenLimit(route.model, inference.inputCap),
            output: () => tally.items(),
            outputBound: (inference.maxOutputTokens ?? route.model.maxOutputTokens ?? fallbackMaxTokens) * inference.choices,
            outputStop,
          },
          request,
          { outputCap: inference.maxOutputTokens, choices: inference.choices, inputCap: inference.inputCap },
        ));
      if (chunks !== undefined) {
        // A stream (read from the moment the supplier answered).
        const outcome = await streamToClient(reply, upstream, translator, {
          headers,
          // The totals the stream ends with are what is charged: noted first, within bounds.
          charged: async () => {
            await charge();
            const totals = usageTotals(route, record.usage);
            return record.usage && totals ? { usage: record.usage, totals } : undefined;
          },
          supplier: route.supplier.name,
          protocol: route.supplier.protocol,
          sawContent: () => tally.sawContent(),
          maxEventChars: deps.upstream.answerLimitBytes,
          chunks,
          credential: sentCredential(route, signal),
        });
        await charge();
        return { value: reply as unknown, lateError: outcome.error };
      }
      const json = await readJson(upstream, route, deps.upstream.answerLimitBytes);
      const body = (() => {
        try {
          return readSupplierAnswer(route.supplier.name, () => translator.response(json));
        } catch (error) {
          // An error object in a 2xx body, as the supplier wrote it: without the credential it was sent.
          throw errorWithoutCredential(error, sentCredential(route, signal));
        }
      })();
      await charge();
      void reply.headers({ ...headers(), ...usageHeaders(route, record.usage) });
      // A usage the gateway counted replaces the supplier's missing or partial one in the body too.
      const countedUsage = record.usageCounted === undefined ? undefined : record.usage;
      return { value: countedUsage ? withChargedUsage(inference.client.family, body, countedUsage) : body };
    },
  });
}
