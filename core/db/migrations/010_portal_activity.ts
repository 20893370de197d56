import type { Knex } from 'knex';

/**
 * What happened in each portal account (core/activity): sign-ins, key changes, terms accepted,
 * settings — written by every portal action, read by /dashboard/activity. `actor_user_id` is who
 * did it when that was someone else (an administrator acting on the account).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('portal_activity', (t) => {
    t.bigIncrements('id').primary();
    t.integer('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.integer('actor_user_id').nullable().references('users.id').onDelete('SET NULL');
    t.string('kind', 64).notNullable();
    t.string('summary', 500).notNullable();
    t.jsonb('details').notNullable().defaultTo('{}');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['user_id', 'id'], 'portal_activity_user_idx');
  });
}

/** Drops the activity table. */
export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('portal_activity');
}
