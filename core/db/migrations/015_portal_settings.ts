import type { Knex } from 'knex';

/**
 * Platform-wide portal settings an administrator changes at run time (not deployment settings):
 * one JSON value per key, with who changed it and when. First user: the quality explorer's
 * availability (docs/portal.md "Quality explorer").
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('portal_settings', (t) => {
    t.string('key', 100).primary();
    t.jsonb('value').notNullable();
    t.integer('updated_by').nullable().references('users.id').onDelete('SET NULL');
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('portal_settings');
}
