import type { Knex } from 'knex';

/**
 * Wallet amounts in nano-USD, the unit the audit log records costs in, so a debit equals its
 * request's audited cost to the unit (micro-USD rounded each request's cost). Existing rows are
 * converted exactly; `amount_micro` stays, written too, for a release that still reads it.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('wallet_entries', (t) => {
    t.bigInteger('amount_nano');
  });
  await knex('wallet_entries').update({ amount_nano: knex.raw('amount_micro * 1000') });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('wallet_entries', (t) => {
    t.dropColumn('amount_nano');
  });
}
