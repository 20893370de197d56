import type { Knex } from 'knex';

/**
 * A user's monthly budget (docs/administration.md "User billing"): a cap on what the keys the
 * user created spend together in a UTC calendar month, set by owners and platform admins and
 * enforced by the gateway like an organisation's monthly budget. Null: none.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('users', (t) => {
    t.decimal('monthly_budget_usd', 18, 6).nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('users', (t) => {
    t.dropColumn('monthly_budget_usd');
  });
}
