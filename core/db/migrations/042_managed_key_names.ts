import type { Knex } from 'knex';

/**
 * A key's name holds a ManagedKey's `<namespace>/<name>`: a namespace of up to 63 characters and a
 * name of up to 253 (docs/crds.md) — 317. At 200 a ManagedKey named with more than 199 characters
 * less its namespace's was never stored: its reconcile failed on every retry (outside probe). Keys
 * made through the Management API or the portal keep their own 200-character limit.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('api_keys', (t) => {
    t.string('name', 320).notNullable().alter();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('api_keys', (t) => {
    t.string('name', 200).notNullable().alter();
  });
}
