import type { Knex } from 'knex';

/**
 * A refund the bank could not pay (`failed` or `canceled` after it was made): its `refund` row in
 * billing_payments carries the processor's refund id, unique, so the give-back it records happens
 * once however many of the processor's events report the failure (`charge.refund.updated`,
 * `refund.updated`, `refund.failed` all can). Refund rows made from `charge.refunded` carry none:
 * that event reports the charge's cumulative refunded amount, not the refunds.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('billing_payments', (t) => {
    t.string('refund_id', 255).nullable().unique();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('billing_payments', (t) => {
    t.dropColumn('refund_id');
  });
}
