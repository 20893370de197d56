import type { Knex } from 'knex';

/**
 * Projects (docs/projects.md): a named group of people in an organisation whose API tokens
 * (`svc_…`, kind `token`, payer `project:<id>`) are paid by the project's own wallet. The creator
 * is a member; members issue and revoke the project's tokens. Deleting an organisation requires
 * it to be empty of users, and a merge moves projects, so projects never outlive their
 * organisation silently (cascade only as the last resort).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('projects', (t) => {
    t.increments('id').primary();
    t.integer('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE');
    t.integer('department_id').nullable().references('departments.id').onDelete('SET NULL');
    t.string('name', 200).notNullable();
    t.string('description', 1000).nullable();
    t.integer('created_by').nullable().references('users.id').onDelete('SET NULL');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['organisation_id'], 'projects_organisation_idx');
  });
  // One name per organisation, whatever its case.
  await knex.raw('create unique index projects_name_unique on projects (organisation_id, lower(name))');
  await knex.schema.createTable('project_members', (t) => {
    t.integer('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.integer('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.integer('added_by').nullable().references('users.id').onDelete('SET NULL');
    t.timestamp('added_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['project_id', 'user_id']);
    t.index(['user_id'], 'project_members_user_idx');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('project_members');
  await knex.schema.dropTableIfExists('projects');
}
