import type { Knex } from 'knex';

/**
 * An automatic top-up operation keeps what it charges — the processor customer and the payment
 * method chosen when it was created — so every retry under its idempotency key sends exactly the
 * same request (a retry that read the payer's default card anew sent other parameters after the
 * default changed, which the processor refuses as an idempotency error).
 *
 * `billing_installation` holds one random id per database, made by the portal on first use (not
 * here: a database copied from a migrated template must get its own): it is part of every
 * idempotency key the portal sends the processor, so two deployments sharing a processor account
 * (or one whose database was reset) never replay each other's customers and checkouts.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('billing_installation', (t) => {
    t.string('install_id', 64).primary();
  });
  await knex.schema.alterTable('billing_auto_topup_operations', (t) => {
    t.string('processor_customer_id', 255).nullable();
    t.string('payment_method_id', 255).nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('billing_installation');
  await knex.schema.alterTable('billing_auto_topup_operations', (t) => {
    t.dropColumn('processor_customer_id');
    t.dropColumn('payment_method_id');
  });
}
