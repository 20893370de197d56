import type { Knex } from 'knex';

/**
 * Saved reports and their export jobs (docs/reports.md): a report is a named, saved query over
 * the caller's usage or request log; an export job writes one report's rows to a file in the
 * background (the job queue), with progress a person can watch, a cancel flag the worker checks
 * between batches, and a heartbeat so a job whose worker died is never left "running".
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('saved_reports', (t) => {
    t.increments('id').primary();
    t.integer('owner_user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.string('name', 200).notNullable();
    t.string('kind', 32).notNullable();
    t.jsonb('definition').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['owner_user_id'], 'saved_reports_owner_idx');
  });
  await knex.schema.createTable('report_exports', (t) => {
    t.uuid('id').primary();
    t.integer('report_id').notNullable().references('saved_reports.id').onDelete('CASCADE');
    t.integer('owner_user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.string('format', 16).notNullable();
    t.string('state', 16).notNullable();
    t.boolean('cancel_requested').notNullable().defaultTo(false);
    t.bigInteger('total_rows').nullable();
    t.bigInteger('rows_written').notNullable().defaultTo(0);
    t.bigInteger('bytes_written').notNullable().defaultTo(0);
    t.string('error', 500).nullable();
    t.integer('attempts').notNullable().defaultTo(0);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('started_at', { useTz: true }).nullable();
    t.timestamp('heartbeat_at', { useTz: true }).nullable();
    t.timestamp('finished_at', { useTz: true }).nullable();
    t.timestamp('expires_at', { useTz: true }).nullable();
    t.index(['owner_user_id', 'created_at'], 'report_exports_owner_idx');
    t.index(['state', 'heartbeat_at'], 'report_exports_state_idx');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('report_exports');
  await knex.schema.dropTableIfExists('saved_reports');
}
