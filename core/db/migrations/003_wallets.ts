import type { Knex } from 'knex';

/**
 * Wallets: an append-only ledger of credits and debits per payer (the balance is their sum),
 * and the payer a key's requests are charged to. A key without a payer is paid by its caller
 * outside the platform's wallets (no prepaid balance is enforced for it).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('api_keys', (t) => {
    t.string('payer_id', 200);
  });
  await knex.schema.createTable('wallet_entries', (t) => {
    t.bigIncrements('id').primary();
    t.string('payer_id', 200).notNullable();
    // Micro-USD, signed: credits positive, debits negative.
    t.bigInteger('amount_micro').notNullable();
    t.string('kind', 16).notNullable();
    t.string('reason', 500).notNullable();
    // Debits carry the request they pay for; unique so a retried audit batch cannot charge twice.
    t.string('request_id', 64).unique();
    t.string('actor', 200).notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['payer_id', 'id']);
  });
}

/** Drops the ledger and the payer column. */
export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('wallet_entries');
  await knex.schema.alterTable('api_keys', (t) => {
    t.dropColumn('payer_id');
  });
}
