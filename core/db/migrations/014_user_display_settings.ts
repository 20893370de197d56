import type { Knex } from 'knex';

/**
 * Display settings a user keeps for the dashboard (`POST /dashboard/settings/display-name`): a
 * JSON object of free properties, bounded in size and depth by the route, stored as given.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('users', (t) => {
    t.jsonb('display_settings').notNullable().defaultTo('{}');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('users', (t) => {
    t.dropColumn('display_settings');
  });
}
