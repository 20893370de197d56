import type { Knex } from 'knex';

/**
 * Export files kept in PostgreSQL as ordered chunks (docs/reports.md "Exports"), so the worker
 * that writes an export and the portal replica that serves its download need no shared disk:
 * any pod of any Deployment reads what another wrote. Chunks go with their export.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('report_export_chunks', (t) => {
    t.uuid('export_id').notNullable().references('report_exports.id').onDelete('CASCADE');
    t.integer('seq').notNullable();
    t.binary('data').notNullable();
    t.primary(['export_id', 'seq']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('report_export_chunks');
}
