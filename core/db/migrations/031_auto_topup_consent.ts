import type { Knex } from 'knex';

/**
 * Automatic top-up settings saved "off" by someone who never turned them on hold no consent:
 * `consented_at` may be null. Before this version the column was required, so a first save with
 * `enabled: false` recorded a consent (now, by the caller) that the caller had refused.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('billing_auto_topup', (t) => {
    t.timestamp('consented_at', { useTz: true }).nullable().alter();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex('billing_auto_topup').whereNull('consented_at').update({ consented_at: knex.fn.now() });
  await knex.schema.alterTable('billing_auto_topup', (t) => {
    t.timestamp('consented_at', { useTz: true }).notNullable().alter();
  });
}
