import type { Knex } from 'knex';

/**
 * The dashboard's get-started checklist per user (docs/portal.md "Get started"): whether it is
 * hidden, and the steps the user ticked by hand. Steps with evidence (a key, a request, funds)
 * tick themselves from the data and are not stored.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('user_get_started', (t) => {
    t.integer('user_id').primary().references('users.id').onDelete('CASCADE');
    t.boolean('hidden').notNullable().defaultTo(false);
    t.jsonb('ticked').notNullable().defaultTo('[]');
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('user_get_started');
}
