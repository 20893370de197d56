import type { Knex } from 'knex';

/**
 * The installation id (migration 038) a payment's processor objects carry in their metadata
 * (`install_id`): set on checkout payments and automatic top-up operations (and their payments)
 * created from now on. An event matched to a payment through metadata must carry this id; a
 * payment created before it (null here) keeps matching metadata without one, as it did
 * (docs/billing.md "Deployments sharing a processor account"). An operation keeps it so every
 * retry under its idempotency key sends the same metadata.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('billing_payments', (t) => {
    t.string('install_id', 64).nullable();
  });
  await knex.schema.alterTable('billing_auto_topup_operations', (t) => {
    t.string('install_id', 64).nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('billing_payments', (t) => {
    t.dropColumn('install_id');
  });
  await knex.schema.alterTable('billing_auto_topup_operations', (t) => {
    t.dropColumn('install_id');
  });
}
