// What a portal user has observed of each model through their own keys (docs/portal.md
// "Dashboard: models"): requests, error and failover rates of those that reached a supplier, p50/p95 latency of answered
// requests, tokens and cost, over a window, from the audit log within the user's scope.
import type { Knex } from 'knex';
import { AUDIT_TABLE } from '../audit/rows.js';
import { keysInScope, type KeyScope } from './scope.js';

/** Observations of one model (or of one supplier serving it). */
export interface ModelObservation {
  model: string;
  supplier?: string;
  requests: number;
  /**
   * Refused by the gateway before any supplier (the key's policy, a budget, a rate limit, an empty
   * wallet: the refusals the audit log keeps): they say nothing of the model, so they are left
   * out of the errors and both rates.
   */
  refused: number;
  /** Failed requests that reached a supplier. */
  errors: number;
  /** errors / (requests − refused). */
  error_rate: number;
  /** Answered by a fallback supplier, of the requests that reached one. */
  failover_rate: number;
  /** Latency of answered requests (status < 400), ms; null without any. */
  p50_latency_ms: number | null;
  p95_latency_ms: number | null;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
}

type Row = Record<string, string | number | null>;

function present(row: Row): ModelObservation {
  const requests = Number(row.requests ?? 0);
  const refused = Number(row.refused ?? 0);
  const errors = Number(row.errors ?? 0);
  const routed = requests - refused;
  const ratio = (n: number) => (routed === 0 ? 0 : Math.round((n / routed) * 10_000) / 10_000);
  return {
    model: String(row.model),
    ...(row.supplier !== undefined && { supplier: String(row.supplier ?? '') }),
    requests,
    refused,
    errors,
    error_rate: ratio(errors),
    failover_rate: ratio(Number(row.failovers ?? 0)),
    p50_latency_ms: row.p50 === null || row.p50 === undefined ? null : Math.round(Number(row.p50)),
    p95_latency_ms: row.p95 === null || row.p95 === undefined ? null : Math.round(Number(row.p95)),
    input_tokens: Number(row.input_tokens ?? 0),
    output_tokens: Number(row.output_tokens ?? 0),
    cost_usd: Number(row.cost_usd ?? 0),
  };
}

/** Per model (and with `bySupplier`, per model and supplier) since `from`, within `scope`. */
export async function modelObservations(
  knex: Knex,
  scope: KeyScope,
  from: Date,
  options: { model?: string; bySupplier?: boolean } = {},
): Promise<ModelObservation[]> {
  let q = knex(AUDIT_TABLE)
    .whereIn('key_id', keysInScope(knex, scope))
    .andWhere('ts', '>=', from.toISOString())
    .whereNotNull('model')
    .select('model')
    .select(
      knex.raw('count(*) as requests'),
      // No supplier named: the gateway refused it before routing (a failed call names its supplier).
      knex.raw('count(*) filter (where status >= 400 and supplier is null) as refused'),
      knex.raw('count(*) filter (where status >= 400 and supplier is not null) as errors'),
      knex.raw('count(*) filter (where failover) as failovers'),
      knex.raw('percentile_cont(0.5) within group (order by latency_ms) filter (where status < 400) as p50'),
      knex.raw('percentile_cont(0.95) within group (order by latency_ms) filter (where status < 400) as p95'),
      knex.raw('sum(input_tokens) as input_tokens'),
      knex.raw('sum(output_tokens) as output_tokens'),
      knex.raw('sum(cost_usd) as cost_usd'),
    )
    .groupBy('model');
  if (options.model !== undefined) q = q.where('model', options.model);
  if (options.bySupplier) q = q.select(knex.raw("coalesce(supplier, '') as supplier")).groupByRaw("coalesce(supplier, '')");
  const rows = (await q) as Row[];
  return rows.map(present).sort((a, b) => b.requests - a.requests || a.model.localeCompare(b.model));
}
