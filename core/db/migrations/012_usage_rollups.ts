import type { Knex } from 'knex';

/**
 * Usage rollups for the dashboard (docs/portal.md "Dashboard: usage"): one row per key, UTC hour,
 * model and supplier with the request count, errors, tokens, cost and summed latency. The audit
 * writer adds each batch's rows in the same transaction as it inserts them, counting only the
 * records that transaction inserted, so a retried batch is never counted twice and the rollup
 * always equals the audit log. Charts over months read a few thousand rollup rows instead of
 * millions of requests. Existing audit rows are rolled up here.
 *
 * Also an index on audit_log (ts desc, request_id desc) for the request log of administrators,
 * whose scope is many keys (a key's own log uses audit_log_key_ts_idx), and `audit_log.seq`, an
 * integer id per row from a sequence: the portal's request-log detail is addressed by an integer
 * (`/dashboard/request-log/{request_id}`), while `request_id` stays the gateway's X-Request-Id.
 * A sequence default rather than an identity column: PostgreSQL before 17 has no identity
 * columns on partitioned tables.
 *
 * Upgrading a large installation: the backfill reads the whole audit log once, and the new column
 * (a volatile default) rewrites it under an exclusive lock, during which audit writes wait (records
 * stay in the store's stream); plan it outside peak hours
 * (docs/deploy.md "Upgrade").
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table usage_hourly (
      key_id text not null,
      hour timestamptz not null,
      model text not null default '',
      supplier text not null default '',
      requests integer not null default 0,
      errors integer not null default 0,
      input_tokens bigint not null default 0,
      output_tokens bigint not null default 0,
      cached_input_tokens bigint not null default 0,
      cost_usd numeric(20, 9) not null default 0,
      latency_ms_sum bigint not null default 0,
      primary key (key_id, hour, model, supplier)
    )`);
  await knex.raw('create index usage_hourly_hour_idx on usage_hourly (hour)');
  await knex.raw(`
    insert into usage_hourly (key_id, hour, model, supplier, requests, errors, input_tokens, output_tokens,
                              cached_input_tokens, cost_usd, latency_ms_sum)
    select key_id, date_trunc('hour', ts, 'UTC'), coalesce(model, ''), coalesce(supplier, ''), count(*),
           count(*) filter (where status >= 400), sum(input_tokens), sum(output_tokens), sum(cached_input_tokens),
           sum(cost_usd), sum(latency_ms)
    from audit_log
    group by 1, 2, 3, 4`);
  await knex.raw('create index audit_log_ts_idx on audit_log (ts desc, request_id desc)');
  await knex.raw('create sequence audit_log_seq as bigint');
  await knex.raw("alter table audit_log add column seq bigint not null default nextval('audit_log_seq')");
  await knex.raw('create index audit_log_seq_idx on audit_log (seq)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table audit_log drop column if exists seq');
  await knex.raw('drop sequence if exists audit_log_seq');
  await knex.raw('drop index if exists audit_log_ts_idx');
  await knex.raw('drop table if exists usage_hourly');
}
