import type { Knex } from 'knex';

/**
 * The audit log: one row per gateway request, written in batches from the audit stream.
 *
 * Declaratively range-partitioned by month on `ts` (checked on PostgreSQL 15 and on PGlite,
 * which is PostgreSQL 18): old months are dropped or archived as whole tables, and time-range
 * queries prune to the months they touch. Month partitions are created on demand by the audit
 * writer before it inserts a batch that needs them (core/audit/partitions.ts); the default
 * partition is the safety net for rows of a month whose partition could not be created.
 *
 * The primary key must contain the partition key, so it is (request_id, ts): a record retried
 * after a crash between insert and ack carries the same request id and timestamp and is
 * skipped by `ON CONFLICT DO NOTHING`. Money is numeric with 9 decimals, the precision the
 * gateway rounds a request's cost to, so sums over many tiny requests stay exact.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table audit_log (
      request_id text not null,
      ts timestamptz not null,
      key_id text not null,
      payer_id text,
      interface text not null,
      model text,
      supplier text,
      region text,
      input_tokens integer not null default 0,
      output_tokens integer not null default 0,
      cached_input_tokens integer not null default 0,
      cost_usd numeric(18, 9) not null default 0,
      latency_ms integer not null default 0,
      status integer not null,
      code text,
      failover boolean not null default false,
      attempts jsonb not null default '[]'::jsonb,
      session text,
      written_at timestamptz not null default now(),
      primary key (request_id, ts)
    ) partition by range (ts)`);
  await knex.raw('create table audit_log_default partition of audit_log default');
  // The Management API pages a key's log newest first by (ts, request_id).
  await knex.raw('create index audit_log_key_ts_idx on audit_log (key_id, ts desc, request_id desc)');
}

/** Drops the audit log with all its partitions. */
export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop table if exists audit_log cascade');
}
