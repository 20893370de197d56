import type { Knex } from 'knex';

/**
 * Billing (docs/billing.md): card top-ups through the payment processor credit the wallet
 * ledger exactly once.
 *
 * - `wallet_entries.reference`: the processor object a credit or reversal comes from
 *   (`checkout:<session>`, `auto_topup:<operation>`, `refund:<charge>:<cumulative cents>`),
 *   unique, so the same payment can never be credited twice whatever path delivers it.
 * - `billing_processor_events`: every webhook event id processed (primary key), written in the
 *   same transaction as its ledger change: a redelivery, concurrent or days later, finds it.
 * - `billing_mirror_outbox`: ledger changes not yet applied to the gateway's wallet mirror in the
 *   store, written in that transaction too and removed once applied (applied at most once).
 * - `billing_payments`: the payment history (checkout top-ups, auto top-ups, refunds).
 * - `billing_checkout_sessions`: hosted pages started by a user, for the confirmation page.
 * - `billing_customers`: the processor customer of each payer and its default card.
 * - `billing_auto_topup` and `billing_auto_topup_operations`: versioned settings with consent;
 *   at most one open operation per payer (partial unique index).
 * - `organisations.billing_user_id` and `billing_email`, `billing_delegations`: who pays
 *   (core/billing/payer.ts).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('wallet_entries', (t) => {
    t.string('reference', 255).nullable().unique();
  });
  await knex.schema.alterTable('organisations', (t) => {
    t.integer('billing_user_id').nullable().references('users.id').onDelete('SET NULL');
    t.string('billing_email', 320).nullable();
  });
  await knex.schema.createTable('billing_delegations', (t) => {
    // The user whose requests are paid by another user's wallet.
    t.integer('user_id').primary().references('users.id').onDelete('CASCADE');
    t.integer('delegate_user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.integer('created_by').nullable().references('users.id').onDelete('SET NULL');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.schema.createTable('billing_customers', (t) => {
    t.string('payer_id', 200).primary();
    t.string('processor_customer_id', 255).notNullable().unique();
    t.string('default_payment_method_id', 255).nullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.schema.createTable('billing_payments', (t) => {
    t.bigIncrements('id').primary();
    t.string('payer_id', 200).notNullable();
    // Who started it (null for refunds made at the processor).
    t.integer('user_id').nullable().references('users.id').onDelete('SET NULL');
    t.string('kind', 16).notNullable();
    t.string('status', 24).notNullable();
    // Wallet effect in nano-USD: the credit bought (positive; posted once the processor confirms)
    // or a refund's reversal (negative).
    t.bigInteger('credit_nano').notNullable();
    // What the card is charged (or refunded), and the fee part, in cents.
    t.integer('amount_cents').notNullable();
    t.integer('fee_cents').notNullable().defaultTo(0);
    t.string('currency', 3).notNullable().defaultTo('usd');
    t.string('checkout_session_id', 255).nullable().unique();
    t.string('payment_intent_id', 255).nullable().unique();
    t.string('charge_id', 255).nullable();
    t.bigInteger('original_payment_id').nullable().references('billing_payments.id');
    // Refunds so far (cumulative, as the processor reports them) and the wallet reversed for them.
    t.integer('refunded_cents').notNullable().defaultTo(0);
    t.bigInteger('reversed_nano').notNullable().defaultTo(0);
    t.string('failure_code', 64).nullable();
    t.string('failure_message', 500).nullable();
    t.string('auto_topup_operation_id', 40).nullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('completed_at', { useTz: true }).nullable();
    t.index(['payer_id', 'id']);
    t.index(['user_id', 'id']);
  });
  await knex.raw(
    "alter table billing_payments add constraint billing_payments_kind_check check (kind in ('checkout', 'auto_topup', 'refund'))",
  );
  await knex.schema.createTable('billing_checkout_sessions', (t) => {
    t.string('session_id', 255).primary();
    t.string('mode', 16).notNullable();
    t.string('payer_id', 200).notNullable();
    t.integer('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.bigInteger('payment_id').nullable().references('billing_payments.id');
    t.string('status', 16).notNullable().defaultTo('open');
    t.string('payment_method_id', 255).nullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('completed_at', { useTz: true }).nullable();
  });
  await knex.schema.createTable('billing_processor_events', (t) => {
    t.string('event_id', 255).primary();
    t.string('type', 100).notNullable();
    t.string('outcome', 32).notNullable();
    t.bigInteger('payment_id').nullable();
    t.string('detail', 500).nullable();
    t.timestamp('processed_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.schema.createTable('billing_mirror_outbox', (t) => {
    t.bigInteger('wallet_entry_id').primary();
    t.string('payer_id', 200).notNullable();
    t.bigInteger('amount_nano').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.schema.createTable('billing_auto_topup', (t) => {
    t.string('payer_id', 200).primary();
    t.integer('version').notNullable();
    t.boolean('enabled').notNullable();
    t.bigInteger('threshold_nano').notNullable();
    t.bigInteger('amount_nano').notNullable();
    t.bigInteger('monthly_cap_nano').notNullable();
    t.string('policy_version', 32).notNullable();
    t.integer('consented_by').nullable().references('users.id').onDelete('SET NULL');
    t.timestamp('consented_at', { useTz: true }).notNullable();
    // Set when a charge failed or needed the cardholder: nothing more is tried until saved again.
    t.string('paused_reason', 64).nullable();
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.schema.createTable('billing_auto_topup_operations', (t) => {
    t.string('id', 40).primary();
    t.string('payer_id', 200).notNullable();
    t.integer('settings_version').notNullable();
    t.string('status', 24).notNullable();
    t.bigInteger('amount_nano').notNullable();
    t.integer('amount_cents').notNullable();
    t.integer('fee_cents').notNullable();
    t.string('payment_intent_id', 255).nullable().unique();
    t.bigInteger('payment_id').nullable().references('billing_payments.id');
    t.integer('user_id').nullable().references('users.id').onDelete('SET NULL');
    t.string('failure_code', 64).nullable();
    t.string('failure_message', 500).nullable();
    t.integer('attempts').notNullable().defaultTo(0);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['payer_id', 'created_at']);
  });
  // At most one operation in progress per payer, whatever number of watchers race to create it.
  await knex.raw(
    "create unique index billing_auto_topup_operations_one_open on billing_auto_topup_operations (payer_id) where status = 'pending'",
  );
}

/** Drops the billing tables and columns. */
export async function down(knex: Knex): Promise<void> {
  for (const table of [
    'billing_auto_topup_operations',
    'billing_auto_topup',
    'billing_mirror_outbox',
    'billing_processor_events',
    'billing_checkout_sessions',
    'billing_payments',
    'billing_customers',
    'billing_delegations',
  ]) {
    await knex.schema.dropTableIfExists(table);
  }
  await knex.schema.alterTable('organisations', (t) => {
    t.dropColumn('billing_user_id');
    t.dropColumn('billing_email');
  });
  await knex.schema.alterTable('wallet_entries', (t) => {
    t.dropUnique(['reference']);
    t.dropColumn('reference');
  });
}
