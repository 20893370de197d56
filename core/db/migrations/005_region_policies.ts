import type { Knex } from 'knex';

/**
 * Region policies (one row per RegionPolicy resource, written by the operator): which suppliers
 * may serve requests in which region. `regions` is the list of `{ region, allowedSuppliers }`
 * rules; the gateway loads them all into memory and routes by them.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('region_policies', (t) => {
    t.string('name', 253).primary();
    t.jsonb('regions').notNullable();
    t.string('failure_policy', 16).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
}

/** Drops the policies table. */
export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('region_policies');
}
