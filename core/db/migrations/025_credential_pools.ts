import type { Knex } from 'knex';

/**
 * Supplier credential pools (docs/routing.md "Credential pools"): a stored provider may hold a
 * pool of credentials — each a name and an environment variable, or a key encrypted at rest
 * (`[{name, api_key_env} | {name, api_key_ciphertext}]`) — and the gateways record what
 * happens to each credential (rate-limited, rejected, recovered, rotated) in `credential_events`,
 * the infrastructure token log administrators read at `/api/admin/token-logs`.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('catalogue_providers', (t) => {
    t.jsonb('credentials').nullable();
  });
  await knex.schema.createTable('credential_events', (t) => {
    t.bigIncrements('id').primary();
    t.timestamp('at', { useTz: true }).notNullable();
    t.string('provider', 63).notNullable();
    t.string('key_name', 63).notNullable();
    t.string('kind', 32).notNullable();
    t.string('error_kind', 100).nullable();
    t.integer('upstream_status').nullable();
    t.string('message', 500).nullable();
    t.string('source', 32).notNullable();
    t.string('replica', 100).nullable();
    t.timestamp('sidelined_until', { useTz: true }).nullable();
    t.index(['at'], 'credential_events_at_idx');
    t.index(['provider', 'key_name', 'at'], 'credential_events_key_idx');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('credential_events');
  await knex.schema.alterTable('catalogue_providers', (t) => {
    t.dropColumn('credentials');
  });
}
