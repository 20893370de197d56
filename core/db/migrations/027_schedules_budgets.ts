import type { Knex } from 'knex';

/**
 * Scheduled reports and budget alerts (docs/reports.md "Schedules", docs/budgets.md).
 * - report_schedules: a report run on a cadence in the owner's time zone, mailed to recipients
 *   of the owner's organisation; schedule_runs: one row per due time (unique), so however many
 *   replicas see it due, it runs once.
 * - budget_policies: a monthly amount for a user or an organisation with alert thresholds and an
 *   optional hard stop; budget_alert_consents: who agreed to receive alerts; budget_alerts: one
 *   row per policy, month, threshold and recipient (unique: each alerts once), with its delivery.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('report_schedules', (t) => {
    t.increments('id').primary();
    t.integer('report_id').notNullable().references('saved_reports.id').onDelete('CASCADE');
    t.integer('owner_user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.string('cadence', 16).notNullable();
    t.string('time_of_day', 5).notNullable();
    t.smallint('weekday').nullable();
    t.smallint('month_day').nullable();
    t.string('time_zone', 64).notNullable();
    t.jsonb('recipient_user_ids').notNullable();
    t.boolean('enabled').notNullable().defaultTo(true);
    t.timestamp('next_run_at', { useTz: true }).notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['enabled', 'next_run_at'], 'report_schedules_due_idx');
  });
  await knex.schema.createTable('schedule_runs', (t) => {
    t.increments('id').primary();
    t.integer('schedule_id').notNullable().references('report_schedules.id').onDelete('CASCADE');
    t.timestamp('due_at', { useTz: true }).notNullable();
    t.string('state', 16).notNullable();
    t.uuid('export_id').nullable();
    t.string('error', 500).nullable();
    t.integer('recipients').notNullable().defaultTo(0);
    t.timestamp('reviewed_at', { useTz: true }).nullable();
    t.integer('reviewed_by').nullable().references('users.id').onDelete('SET NULL');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('finished_at', { useTz: true }).nullable();
    t.unique(['schedule_id', 'due_at']);
  });
  await knex.schema.alterTable('report_exports', (t) => {
    t.integer('schedule_run_id').nullable();
  });
  await knex.schema.createTable('budget_policies', (t) => {
    t.increments('id').primary();
    t.string('scope', 16).notNullable();
    t.integer('user_id').nullable().references('users.id').onDelete('CASCADE');
    t.integer('organisation_id').nullable().references('organisations.id').onDelete('CASCADE');
    t.decimal('amount_usd', 18, 6).notNullable();
    t.jsonb('thresholds').notNullable();
    t.boolean('hard_stop').notNullable().defaultTo(false);
    t.boolean('active').notNullable().defaultTo(true);
    t.integer('created_by').nullable().references('users.id').onDelete('SET NULL');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  // One active policy per subject.
  await knex.raw("create unique index budget_policies_active_user on budget_policies (user_id) where active and scope = 'user'");
  await knex.raw(
    "create unique index budget_policies_active_org on budget_policies (organisation_id) where active and scope = 'organisation'",
  );
  await knex.schema.createTable('budget_alert_consents', (t) => {
    t.integer('user_id').primary().references('users.id').onDelete('CASCADE');
    t.boolean('consented').notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.schema.createTable('budget_alerts', (t) => {
    t.bigIncrements('id').primary();
    t.integer('policy_id').notNullable().references('budget_policies.id').onDelete('CASCADE');
    t.string('period', 7).notNullable();
    t.smallint('threshold').notNullable();
    t.integer('recipient_user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.decimal('spent_usd', 18, 9).notNullable();
    t.decimal('amount_usd', 18, 6).notNullable();
    t.string('state', 16).notNullable();
    t.string('reason', 500).nullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('sent_at', { useTz: true }).nullable();
    t.unique(['policy_id', 'period', 'threshold', 'recipient_user_id']);
    t.index(['recipient_user_id', 'id'], 'budget_alerts_recipient_idx');
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['budget_alerts', 'budget_alert_consents', 'budget_policies', 'schedule_runs', 'report_schedules'])
    await knex.schema.dropTableIfExists(table);
  await knex.schema.alterTable('report_exports', (t) => {
    t.dropColumn('schedule_run_id');
  });
}
