import type { Knex } from 'knex';

/**
 * The audit log keeps the input tokens written to a supplier's prompt cache. They are priced at
 * the model's cache-write rate (Anthropic bills 1.25× or 2× the input price), so a row whose cost
 * was above its input and output tokens' price showed no reason for it. Rows written before: 0.
 * Adding a column with a constant default rewrites nothing (PostgreSQL 11+), and on the
 * partitioned table it reaches every partition.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('audit_log', (t) => {
    t.integer('cache_write_input_tokens').notNullable().defaultTo(0);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('audit_log', (t) => {
    t.dropColumn('cache_write_input_tokens');
  });
}
