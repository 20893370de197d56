// What `auto` chose for a portal user's keys (docs/autorouter.md "Autorouter page"): per model,
// how often and at what cost, per day, and what the same tokens would have cost on one fixed
// model. Read from the audit log's auto-routed rows (a partial index keeps them cheap to find).
import type { Knex } from 'knex';
import type { Catalogue } from '../config/index.js';
import { AUDIT_TABLE } from '../audit/rows.js';
import { keysInScope, type KeyScope } from '../usage/scope.js';

/** One chosen model over the window. */
export interface AutorouterModelShare {
  model: string;
  requests: number;
  /** Share of the auto-routed requests, 0–1, 4 decimals. */
  share: number;
  errors: number;
  input_tokens: number;
  cached_input_tokens: number;
  output_tokens: number;
  cost_usd: number;
  /** The same tokens at the comparison model's price (see comparisonCostNano). */
  comparison_cost_usd: number;
}

/** One UTC day. */
export interface AutorouterDay {
  date: string;
  requests: number;
  cost_usd: number;
  comparison_cost_usd: number;
  /** Requests per chosen model that day. */
  models: Record<string, number>;
}

/** The autorouter report of a scope over the last `days` days. */
export interface AutorouterReport {
  days: number;
  from: string;
  to: string;
  /** The fixed model the costs are compared with, and its prices (USD per million tokens). */
  compare: { model: string; input_usd_per_mtok: number; cached_input_usd_per_mtok: number; output_usd_per_mtok: number } | null;
  totals: { requests: number; errors: number; cost_usd: number; comparison_cost_usd: number; saving_usd: number };
  models: AutorouterModelShare[];
  daily: AutorouterDay[];
}

interface Prices {
  input: number;
  cachedInput: number;
  output: number;
}

/** A model's prices: those of its cheapest route (what the gateway prefers when nothing else differs). */
export function modelPrices(catalogue: Catalogue, model: string): Prices | undefined {
  const routes = catalogue.routes.get(model);
  if (!routes || routes.length === 0) return undefined;
  const cheapest = [...routes].sort(
    (a, b) => a.model.inputUsdPerMtok + a.model.outputUsdPerMtok - (b.model.inputUsdPerMtok + b.model.outputUsdPerMtok),
  )[0]!;
  return {
    input: cheapest.model.inputUsdPerMtok,
    cachedInput: cheapest.model.cachedInputUsdPerMtok,
    output: cheapest.model.outputUsdPerMtok,
  };
}

/**
 * The default comparison: the chat model with the highest input + output price — what the
 * requests would have cost had every one gone to the most expensive model instead.
 */
export function defaultComparisonModel(catalogue: Catalogue): string | undefined {
  let best: { id: string; price: number } | undefined;
  for (const [id, routes] of catalogue.routes) {
    if (!routes.some((r) => r.model.capabilities.includes('chat'))) continue;
    const p = modelPrices(catalogue, id)!;
    const price = p.input + p.output;
    if (!best || price > best.price || (price === best.price && id < best.id)) best = { id, price };
  }
  return best?.id;
}

/**
 * Tokens at a price, in nano-USD: each kind rounded to the nano-dollar, then added, so the sum
 * of the rows equals the total exactly. Cached input tokens are part of the input tokens.
 */
function comparisonCostNano(prices: Prices, input: number, cached: number, output: number): number {
  return (
    Math.round((input - cached) * prices.input * 1000) +
    Math.round(cached * prices.cachedInput * 1000) +
    Math.round(output * prices.output * 1000)
  );
}

const nanoToUsd = (nano: number) => nano / 1e9;
const usdToNano = (usd: string | number) => Math.round(Number(usd) * 1e9);

type Row = { day: string; model: string; requests: string; errors: string; input: string; cached: string; output: string; cost: string };

/** The report for the requests `auto` routed within `scope` in the `days` days up to `now`. */
export async function autorouterReport(
  knex: Knex,
  catalogue: Catalogue,
  options: { scope: KeyScope; days: number; now: Date; compareModel?: string | undefined },
): Promise<AutorouterReport> {
  const to = options.now;
  const from = new Date(Date.UTC(to.getUTCFullYear(), to.getUTCMonth(), to.getUTCDate() - (options.days - 1)));
  const rows = (await knex(AUDIT_TABLE)
    .where('auto_routed', true)
    .whereIn('key_id', keysInScope(knex, options.scope))
    .andWhere('ts', '>=', from.toISOString())
    .andWhere('ts', '<=', to.toISOString())
    .whereNotNull('model')
    .select(
      knex.raw("to_char(ts at time zone 'UTC', 'YYYY-MM-DD') as day"),
      'model',
      knex.raw('count(*) as requests'),
      knex.raw('count(*) filter (where status >= 400) as errors'),
      knex.raw('sum(input_tokens) as input'),
      knex.raw('sum(cached_input_tokens) as cached'),
      knex.raw('sum(output_tokens) as output'),
      knex.raw('sum(cost_usd) as cost'),
    )
    .groupByRaw('1, model')
    .orderByRaw('1, model')) as Row[];

  const compareId = options.compareModel ?? defaultComparisonModel(catalogue);
  const prices = compareId === undefined ? undefined : modelPrices(catalogue, compareId);
  const models = new Map<string, AutorouterModelShare & { costNano: number; comparisonNano: number }>();
  const daily = new Map<string, AutorouterDay & { costNano: number; comparisonNano: number }>();
  for (let d = 0; d < options.days; d++) {
    const date = new Date(from.getTime() + d * 86_400_000).toISOString().slice(0, 10);
    daily.set(date, { date, requests: 0, cost_usd: 0, comparison_cost_usd: 0, models: {}, costNano: 0, comparisonNano: 0 });
  }
  for (const row of rows) {
    const date = row.day;
    const [requests, errors, input, cached, output] = [row.requests, row.errors, row.input, row.cached, row.output].map(Number) as [
      number,
      number,
      number,
      number,
      number,
    ];
    const costNano = usdToNano(row.cost);
    const comparisonNano = prices ? comparisonCostNano(prices, input, cached, output) : 0;
    const m = models.get(row.model) ?? {
      model: row.model,
      requests: 0,
      share: 0,
      errors: 0,
      input_tokens: 0,
      cached_input_tokens: 0,
      output_tokens: 0,
      cost_usd: 0,
      comparison_cost_usd: 0,
      costNano: 0,
      comparisonNano: 0,
    };
    m.requests += requests;
    m.errors += errors;
    m.input_tokens += input;
    m.cached_input_tokens += cached;
    m.output_tokens += output;
    m.costNano += costNano;
    m.comparisonNano += comparisonNano;
    models.set(row.model, m);
    const day = daily.get(date);
    if (day) {
      day.requests += requests;
      day.costNano += costNano;
      day.comparisonNano += comparisonNano;
      day.models[row.model] = (day.models[row.model] ?? 0) + requests;
    }
  }
  const totalRequests = [...models.values()].reduce((n, m) => n + m.requests, 0);
  const totalCost = [...models.values()].reduce((n, m) => n + m.costNano, 0);
  const totalComparison = [...models.values()].reduce((n, m) => n + m.comparisonNano, 0);
  return {
    days: options.days,
    from: from.toISOString(),
    to: to.toISOString(),
    compare:
      compareId !== undefined && prices
        ? {
            model: compareId,
            input_usd_per_mtok: prices.input,
            cached_input_usd_per_mtok: prices.cachedInput,
            output_usd_per_mtok: prices.output,
          }
        : null,
    totals: {
      requests: totalRequests,
      errors: [...models.values()].reduce((n, m) => n + m.errors, 0),
      cost_usd: nanoToUsd(totalCost),
      comparison_cost_usd: nanoToUsd(totalComparison),
      saving_usd: nanoToUsd(totalComparison - totalCost),
    },
    models: [...models.values()]
      .sort((a, b) => b.requests - a.requests || a.model.localeCompare(b.model))
      .map(({ costNano, comparisonNano, ...m }) => ({
        ...m,
        share: totalRequests === 0 ? 0 : Math.round((m.requests / totalRequests) * 10_000) / 10_000,
        cost_usd: nanoToUsd(costNano),
        comparison_cost_usd: nanoToUsd(comparisonNano),
      })),
    daily: [...daily.values()].map(({ costNano, comparisonNano, ...d }) => ({
      ...d,
      cost_usd: nanoToUsd(costNano),
      comparison_cost_usd: nanoToUsd(comparisonNano),
    })),
  };
}
