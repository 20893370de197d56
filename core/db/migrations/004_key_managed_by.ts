import type { Knex } from 'knex';

/**
 * Which Kubernetes object owns a key: `ManagedKey/<namespace>/<name>/<uid>` for keys the
 * operator created (null for keys from the Management API or the portal). Unique, so the
 * operator's create is idempotent: a reconcile that finds the row by its owner never inserts a
 * second key for the same ManagedKey, even after a crash between its steps.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('api_keys', (t) => {
    t.text('managed_by').unique();
  });
}

/** Drops the owner column. */
export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('api_keys', (t) => {
    t.dropColumn('managed_by');
  });
}
