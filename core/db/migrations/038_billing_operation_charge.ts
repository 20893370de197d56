import type { Knex } from 'knex';

/**
 * An automatic top-up operation keeps what it charges — the processor customer and the payment
 * method chosen when it was created — so every retry under its idempotency key sends exactly the
 * same request (a retry that read the payer's default card anew sent other parameters after the
 * default changed, which the processor refuses as an idempotency error).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('billing_auto_topup_operations', (t) => {
    t.string('processor_customer_id', 255).nullable();
    t.string('payment_method_id', 255).nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('billing_auto_topup_operations', (t) => {
    t.dropColumn('processor_customer_id');
    t.dropColumn('payment_method_id');
  });
}
