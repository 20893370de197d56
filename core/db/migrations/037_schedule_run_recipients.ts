import type { Knex } from 'knex';

/**
 * Scheduled reports stay in the organisation they were scheduled in (docs/reports.md
 * "Schedules"; outside probe): before it, a run mailed and served the export to recipients who had
 * since left the owner's organisation, and a run whose owner had moved followed them into their
 * new organisation's data.
 * - report_schedules.organisation_id: the owner's organisation when the schedule was made (null:
 *   they had none); a run whose owner is no longer in it is skipped. Existing schedules take their
 *   owner's organisation now.
 * - schedule_runs.recipient_user_ids: the people a run was actually sent to (downloads and the
 *   runs page admit those only). Existing sent runs take their schedule's list — still filtered
 *   at download time to active members of the schedule's organisation.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('report_schedules', (t) => {
    t.integer('organisation_id').nullable().references('organisations.id').onDelete('SET NULL');
  });
  await knex.raw(`update report_schedules s set organisation_id = u.organisation_id from users u where u.id = s.owner_user_id`);
  await knex.schema.alterTable('schedule_runs', (t) => {
    t.jsonb('recipient_user_ids').notNullable().defaultTo('[]');
  });
  await knex.raw(`
    update schedule_runs r set recipient_user_ids = s.recipient_user_ids
    from report_schedules s where s.id = r.schedule_id and r.state = 'sent'`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('schedule_runs', (t) => t.dropColumn('recipient_user_ids'));
  await knex.schema.alterTable('report_schedules', (t) => t.dropColumn('organisation_id'));
}
