import type { Knex } from 'knex';

/**
 * Promotion grants (docs/administration.md "Promotions"): credit a platform administrator gives
 * a user's wallet, with a reason and an optional expiry. The credit and any withdrawal are
 * ledger entries with unique references (`promotion:<id>`, `promotion:<id>:withdrawal`), so
 * neither can happen twice; `nonce` makes a form submitted twice create one grant.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('promotion_grants', (t) => {
    t.bigIncrements('id').primary();
    t.integer('user_id').notNullable().references('users.id');
    t.string('payer_id', 200).notNullable();
    t.bigInteger('amount_nano').notNullable();
    t.string('reason', 500).notNullable();
    t.timestamp('expires_at', { useTz: true }).nullable();
    t.string('status', 16).notNullable().defaultTo('active');
    t.bigInteger('withdrawn_nano').notNullable().defaultTo(0);
    t.bigInteger('credit_entry_id').nullable();
    t.string('nonce', 100).nullable().unique();
    t.integer('created_by').nullable().references('users.id').onDelete('SET NULL');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['status', 'expires_at'], 'promotion_grants_due_idx');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('promotion_grants');
}
