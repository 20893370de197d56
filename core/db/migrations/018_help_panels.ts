import type { Knex } from 'knex';

/**
 * Which dashboard help panels a user has hidden (docs/portal.md "Help panels"): the autorouter,
 * projects and quality explorer pages explain themselves until the user hides the explanation.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('user_help_panels', (t) => {
    t.integer('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.string('panel', 40).notNullable();
    t.boolean('hidden').notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['user_id', 'panel']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('user_help_panels');
}
