import type { Knex } from 'knex';

/**
 * API keys: managed keys (`svc-sk-`) and API tokens (`svc_`) in one table, whichever door
 * created them (Management API, Kubernetes operator, portal). Only the HMAC of the secret is
 * stored; `secret_hint` keeps the prefix and last four characters for people to recognise it.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('api_keys', (t) => {
    t.string('id', 40).primary();
    t.string('kind', 16).notNullable();
    t.string('name', 200).notNullable();
    t.string('secret_hash', 64).notNullable().unique();
    t.string('secret_hint', 32).notNullable();
    t.string('status', 32).notNullable().defaultTo('active');
    t.jsonb('allowed_models');
    t.jsonb('allowed_regions');
    t.decimal('budget_limit_usd', 18, 6);
    t.string('budget_period', 16);
    t.integer('rate_limit_rpm');
    t.jsonb('metadata').notNullable().defaultTo('{}');
    t.string('source', 16).notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('revoked_at', { useTz: true });
  });
}

/** Drops the keys table. */
export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('api_keys');
}
