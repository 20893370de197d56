import type { Knex } from 'knex';

/**
 * Disputes (docs/billing.md "Disputes"): a payment the card holder disputes is held back from the
 * wallet while the dispute is open (a `dispute` row in billing_payments, its reversal in the
 * ledger under `dispute:<id>`), given back if the dispute is won and kept reversed if it is lost.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('billing_payments', (t) => {
    t.string('dispute_id', 255).nullable().unique();
  });
  await knex.raw('alter table billing_payments drop constraint billing_payments_kind_check');
  await knex.raw(
    "alter table billing_payments add constraint billing_payments_kind_check check (kind in ('checkout', 'auto_topup', 'refund', 'dispute'))",
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex('billing_payments').where({ kind: 'dispute' }).delete();
  await knex.raw('alter table billing_payments drop constraint billing_payments_kind_check');
  await knex.raw(
    "alter table billing_payments add constraint billing_payments_kind_check check (kind in ('checkout', 'auto_topup', 'refund'))",
  );
  await knex.schema.alterTable('billing_payments', (t) => {
    t.dropColumn('dispute_id');
  });
}
