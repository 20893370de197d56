import type { Knex } from 'knex';

/**
 * What platform and organisation administrators set on a user's billing (docs/administration.md
 * "User billing"): an exemption (their portal keys charge no wallet) and a credit limit (how far
 * below zero their wallet may go before the gateway refuses its requests).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('users', (t) => {
    t.boolean('billing_exempt').notNullable().defaultTo(false);
    t.decimal('credit_limit_usd', 18, 6).nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('users', (t) => {
    t.dropColumn('billing_exempt');
    t.dropColumn('credit_limit_usd');
  });
}
