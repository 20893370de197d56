import type { Knex } from 'knex';

/**
 * Who a portal key belongs to: the user who created it and that user's organisation at the time
 * (null for keys from the Management API, the operator or bootstrap). The dashboard scopes its
 * key list and every key action by these columns; the organisation is copied, not joined, so a
 * key stays with its organisation's admins even after its creator leaves.
 *
 * `number` is the key's integer id in portal addresses (`/dashboard/keys/{key_id}`, where every
 * `*_id` is a positive integer); the gateway and the Management API keep the `key_…` id.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('api_keys', (t) => {
    t.specificType('number', 'serial').notNullable().unique();
    t.integer('owner_user_id').references('users.id').onDelete('SET NULL');
    t.integer('organisation_id').references('organisations.id').onDelete('SET NULL');
    t.index(['owner_user_id', 'created_at'], 'api_keys_owner_idx');
    t.index(['organisation_id', 'created_at'], 'api_keys_organisation_idx');
  });
}

/** Drops the ownership columns. */
export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('api_keys', (t) => {
    t.dropIndex(['owner_user_id', 'created_at'], 'api_keys_owner_idx');
    t.dropIndex(['organisation_id', 'created_at'], 'api_keys_organisation_idx');
    t.dropColumn('owner_user_id');
    t.dropColumn('organisation_id');
    t.dropColumn('number');
  });
}
