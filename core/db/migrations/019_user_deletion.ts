import type { Knex } from 'knex';

/**
 * Hard deletion of a user (docs/administration.md "Users"): the row stays as an anonymised
 * tombstone so the ledger, payments and audit log keep their references; `deleted_at` marks it,
 * and user lists leave such rows out unless asked.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('users', (t) => {
    t.timestamp('deleted_at', { useTz: true }).nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('users', (t) => {
    t.dropColumn('deleted_at');
  });
}
