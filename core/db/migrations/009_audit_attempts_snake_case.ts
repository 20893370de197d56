import type { Knex } from 'knex';

/**
 * The audit log's `attempts` column in the row's convention: `startedAt`, `latencyMs` and
 * `selectionMs` inside each attempt become `started_at`, `latency_ms` and `selection_ms`
 * (core/audit/attempt-rows.ts writes them so from now on). Only rows still holding a camelCase
 * key are rewritten; order of attempts is kept.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(rewrite({ startedAt: 'started_at', latencyMs: 'latency_ms', selectionMs: 'selection_ms' }));
}

/** Back to camelCase (what the code before this migration reads). */
export async function down(knex: Knex): Promise<void> {
  await knex.raw(rewrite({ started_at: 'startedAt', latency_ms: 'latencyMs', selection_ms: 'selectionMs' }));
}

/** An UPDATE renaming keys inside every attempt object of rows that hold any of the old names. */
function rewrite(renames: Record<string, string>): string {
  const from = Object.keys(renames);
  const removed = from.map((name) => ` - '${name}'`).join('');
  const added = Object.entries(renames)
    .map(([old, renamed]) => `'${renamed}', a->'${old}'`)
    .join(', ');
  const holdsOld = from.map((name) => `attempts::text like '%"${name}"%'`).join(' or ');
  return `
update audit_log set attempts = (
  select coalesce(jsonb_agg((a${removed}) || jsonb_strip_nulls(jsonb_build_object(${added})) order by ord), '[]'::jsonb)
  from jsonb_array_elements(attempts) with ordinality as t(a, ord)
)
where ${holdsOld}`;
}
