import type { ModelRoute } from '../../../core/config/index.js';
import { costUsd, type TokenUsage } from './cost.js';

/** The spec's routing headers (part 4): who answered, where, whether failover happened, and cost. */
export function routingHeaders(route: ModelRoute, failover: boolean, latencyMs: number, usage?: TokenUsage): Record<string, string> {
  const headers: Record<string, string> = {
    'x-svc-supplier': route.supplier.name,
    'x-svc-region': route.supplier.region,
    'x-svc-failover': String(failover),
    'x-svc-latency-ms': String(Math.round(latencyMs)),
  };
  if (usage) {
    headers['x-svc-input-tokens'] = String(usage.inputTokens);
    headers['x-svc-output-tokens'] = String(usage.outputTokens);
    headers['x-svc-cost-usd'] = costUsd(route.model, usage).toFixed(9).replace(/\.?0+$/, '') || '0';
  }
  return headers;
}
