// Usage over time for the dashboard (docs/portal.md "Dashboard: usage"): requests, errors, tokens
// and cost per hour or day, optionally split by model, key or supplier, read from the hourly
// rollup (core/usage/rollup.ts) — a few rows per hour whatever the traffic.
import type { Knex } from 'knex';
import { USAGE_TABLE } from './rollup.js';
import { keysInScope, type KeyScope } from './scope.js';

export type Granularity = 'hour' | 'day';
export type UsageSplit = 'model' | 'key' | 'supplier';

/** Totals of one bin (or of one group inside a bin). */
export interface UsageTotals {
  requests: number;
  errors: number;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
}

/** One time bin: its start, its totals and, when split, the totals per group. */
export interface UsageBin extends UsageTotals {
  start: string;
  groups?: Record<string, UsageTotals>;
}

export interface UsageQuery {
  scope: KeyScope;
  /** Inclusive start and exclusive end, aligned by the caller to the granularity. */
  from: Date;
  to: Date;
  granularity: Granularity;
  split?: UsageSplit;
}

export interface UsageReport {
  from: string;
  to: string;
  granularity: Granularity;
  split: UsageSplit | null;
  bins: UsageBin[];
  totals: UsageTotals;
  /** Labels of the groups (key names for a split by key), in descending cost. */
  groups: { id: string; label: string; cost_usd: number }[];
}

const stepMs: Record<Granularity, number> = { hour: 3_600_000, day: 86_400_000 };

/** The most bins one report may hold (the route refuses wider ranges). */
export const maxBins = 2_000;

const empty = (): UsageTotals => ({ requests: 0, errors: 0, input_tokens: 0, output_tokens: 0, cost_usd: 0 });

function add(into: UsageTotals, row: UsageTotals): void {
  into.requests += row.requests;
  into.errors += row.errors;
  into.input_tokens += row.input_tokens;
  into.output_tokens += row.output_tokens;
  // Summed in nano-USD and converted once per bin by the caller would be exact; here each row is
  // already a 9-decimal sum from PostgreSQL, so round the running total to the nano-dollar.
  into.cost_usd = Math.round((into.cost_usd + row.cost_usd) * 1e9) / 1e9;
}

/** The usage report of `query`, every bin present (zeros where nothing happened). */
export async function usageReport(knex: Knex, query: UsageQuery): Promise<UsageReport> {
  const { from, to, granularity, split } = query;
  const bin = knex.raw(`date_trunc(?, hour, 'UTC')`, [granularity]);
  const groupColumn = split === 'key' ? 'key_id' : split === 'model' ? 'model' : split === 'supplier' ? 'supplier' : null;
  let builder = knex(USAGE_TABLE)
    .whereIn('key_id', keysInScope(knex, query.scope))
    .andWhere('hour', '>=', from.toISOString())
    .andWhere('hour', '<', to.toISOString())
    .select({ bin })
    .sum({ requests: 'requests', errors: 'errors', input_tokens: 'input_tokens', output_tokens: 'output_tokens', cost_usd: 'cost_usd' })
    .groupByRaw('1')
    .orderByRaw('1');
  if (groupColumn) builder = builder.select({ grp: groupColumn }).groupBy(groupColumn);
  const rows = (await builder) as ({ bin: Date | string; grp?: string } & Record<keyof UsageTotals, string | number | null>)[];

  const bins = new Map<number, UsageBin>();
  for (let t = from.getTime(); t < to.getTime(); t += stepMs[granularity])
    bins.set(t, { start: new Date(t).toISOString(), ...empty(), ...(groupColumn && { groups: {} }) });
  const totals = empty();
  const groupCost = new Map<string, number>();
  for (const row of rows) {
    const values: UsageTotals = {
      requests: Number(row.requests ?? 0),
      errors: Number(row.errors ?? 0),
      input_tokens: Number(row.input_tokens ?? 0),
      output_tokens: Number(row.output_tokens ?? 0),
      cost_usd: Number(row.cost_usd ?? 0),
    };
    const target = bins.get(new Date(row.bin).getTime());
    if (!target) continue;
    add(target, values);
    add(totals, values);
    if (groupColumn) {
      const id = row.grp || '(none)';
      add((target.groups![id] ??= empty()), values);
      groupCost.set(id, (groupCost.get(id) ?? 0) + values.cost_usd);
    }
  }
  const labels = split === 'key' ? await keyLabels(knex, [...groupCost.keys()]) : new Map<string, string>();
  return {
    from: from.toISOString(),
    to: to.toISOString(),
    granularity,
    split: split ?? null,
    bins: [...bins.values()],
    totals,
    groups: [...groupCost.entries()]
      .sort((a, b) => b[1] - a[1])
      .map(([id, cost]) => ({ id, label: labels.get(id) ?? id, cost_usd: Math.round(cost * 1e9) / 1e9 })),
  };
}

/** "name (#number)" of each key id. */
async function keyLabels(knex: Knex, ids: string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const rows = (await knex('api_keys').whereIn('id', ids).select('id', 'name', 'number')) as { id: string; name: string; number: number }[];
  return new Map(rows.map((r) => [r.id, `${r.name} (#${r.number})`]));
}
