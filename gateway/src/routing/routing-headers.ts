import { exactUsdText } from '../../../core/budget/usage.js';
import type { ModelRoute } from '../../../core/config/index.js';
import { boundedUsage, callCostUsd, isCompleteUsage, type MediaUsage, type TokenUsage, type UsageBounds } from './cost.js';

/** Whether the answer came after a failover, and how long the request and its answering attempt took (ms). */
export interface AnswerTiming {
  failover: boolean;
  latencyMs: number;
  attemptLatencyMs: number;
}

/**
 * The routing headers known before the body (docs/spec-conformance.md 4.12): the public model that answered, who
 * served it, where, whether after a failover, the request's latency in the gateway and the
 * answering attempt's.
 */
export function routingHeaders(route: ModelRoute, publicModel: string, timing: AnswerTiming): Record<string, string> {
  return {
    'x-svc-model': publicModel,
    'x-svc-supplier': route.supplier.name,
    'x-svc-region': route.supplier.region,
    'x-svc-failover': String(timing.failover),
    'x-svc-latency-ms': String(Math.round(timing.latencyMs)),
    'x-svc-attempt-latency-ms': String(Math.round(timing.attemptLatencyMs)),
  };
}

/** Cost as a plain decimal (no exponent), at most 9 decimals. */
export const formatUsd = exactUsdText;

/**
 * A call's totals as a client can read them in a response body or stream (the `svc` object and
 * the final `: svc-totals` comment of streams): the same values as the usage headers, cost as
 * the same exact decimal string.
 */
export interface UsageTotals {
  input_tokens: number;
  output_tokens: number;
  cost_usd: string;
}

/** The call's totals once usage is known; undefined when it is not. */
export function usageTotals(route: ModelRoute, usage: TokenUsage | undefined, media?: MediaUsage): UsageTotals | undefined {
  if (!usage && !media) return undefined;
  return {
    input_tokens: usage?.inputTokens ?? 0,
    output_tokens: usage?.outputTokens ?? 0,
    cost_usd: formatUsd(callCostUsd(route.model, usage, media)),
  };
}

/**
 * The totals a stream's own final usage event carries (`svc`): the supplier's usage within
 * bounds (boundedUsage), as the call will be charged — or none while a side is missing, which the
 * gateway counts once the stream ended (pipeline/charged-usage.ts) and the `: svc-totals` comment
 * and trailers carry. So `svc`, the comment, the trailers and the charge never disagree.
 */
export function reportedTotals(route: ModelRoute, usage: TokenUsage | undefined, bounds: UsageBounds): UsageTotals | undefined {
  if (usage === undefined || !isCompleteUsage(usage)) return undefined;
  return usageTotals(route, boundedUsage(route.model, usage, bounds).usage);
}

/** The usage headers (or stream trailers) carrying totals; empty when they are not known. */
export function totalsHeaders(totals: UsageTotals | undefined): Record<string, string> {
  if (!totals) return {};
  return {
    'x-svc-input-tokens': String(totals.input_tokens),
    'x-svc-output-tokens': String(totals.output_tokens),
    'x-svc-cost-usd': totals.cost_usd,
  };
}

/** Token and cost headers (or stream trailers), once usage is known; empty when it is not. */
export function usageHeaders(route: ModelRoute, usage: TokenUsage | undefined, media?: MediaUsage): Record<string, string> {
  return totalsHeaders(usageTotals(route, usage, media));
}
