import type { Knex } from 'knex';

/**
 * A key's budget to the nano-USD, as money is counted everywhere else (docs/keys.md): the column
 * kept 6 decimals, so a budget of 0.0000001 accepted by the Management API was stored as 0 and
 * 0.123456789 as 0.123457. 10 integer digits (budgets go to 1,000,000,000) and 9 decimals.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('api_keys', (t) => {
    t.decimal('budget_limit_usd', 19, 9).nullable().alter();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('api_keys', (t) => {
    t.decimal('budget_limit_usd', 18, 6).nullable().alter();
  });
}
