import type { Knex } from 'knex';

/**
 * Portal identity: organisations, departments, users (email unique whatever its case), linked
 * SSO identities, invites, one-time tokens (stored as HMACs, single use, expiring) and the
 * server-side sessions behind the portal's cookie.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('organisations', (t) => {
    t.increments('id').primary();
    t.string('name', 200).notNullable();
    t.string('slug', 100).notNullable().unique();
    t.boolean('billing_exempt').notNullable().defaultTo(false);
    t.decimal('monthly_budget', 18, 6).nullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.schema.createTable('departments', (t) => {
    t.increments('id').primary();
    t.integer('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE');
    t.string('name', 200).notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['organisation_id', 'name']);
  });
  await knex.schema.createTable('users', (t) => {
    t.increments('id').primary();
    t.string('email', 320).notNullable();
    t.string('display_name', 120).notNullable();
    // Null for accounts that only ever signed in through an identity provider.
    t.text('password_hash').nullable();
    t.string('status', 16).notNullable().defaultTo('active');
    t.string('role', 32).notNullable().defaultTo('member');
    t.integer('organisation_id').nullable().references('organisations.id');
    t.integer('department_id').nullable().references('departments.id');
    t.string('language', 8).notNullable().defaultTo('en');
    t.string('legal_version', 32).nullable();
    t.timestamp('legal_accepted_at', { useTz: true }).nullable();
    t.timestamp('email_verified_at', { useTz: true }).nullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw('create unique index users_email_lower_unique on users (lower(email))');
  await knex.raw("alter table users add constraint users_status_check check (status in ('active', 'suspended', 'archived'))");
  await knex.raw(
    "alter table users add constraint users_role_check check (role in ('owner', 'platform_admin', 'org_admin', 'department_admin', 'member'))",
  );
  await knex.schema.createTable('user_identities', (t) => {
    t.string('provider', 32).notNullable();
    t.string('subject', 255).notNullable();
    t.integer('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['provider', 'subject']);
  });
  await knex.schema.createTable('invites', (t) => {
    t.increments('id').primary();
    t.string('email', 320).notNullable();
    t.integer('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE');
    t.integer('department_id').nullable().references('departments.id');
    t.string('role', 32).notNullable().defaultTo('member');
    t.integer('invited_by').nullable().references('users.id');
    t.string('status', 16).notNullable().defaultTo('pending');
    t.string('token_hash', 64).notNullable().unique();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.schema.createTable('one_time_tokens', (t) => {
    t.increments('id').primary();
    t.string('purpose', 32).notNullable();
    t.string('token_hash', 64).notNullable().unique();
    t.integer('user_id').nullable().references('users.id').onDelete('CASCADE');
    t.jsonb('payload').notNullable().defaultTo('{}');
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('used_at', { useTz: true }).nullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.schema.createTable('portal_sessions', (t) => {
    t.string('sid', 128).primary();
    t.integer('user_id').nullable().references('users.id').onDelete('CASCADE');
    t.jsonb('data').notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable().index();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['user_id']);
  });
}

/** Drops the identity tables. */
export async function down(knex: Knex): Promise<void> {
  for (const table of ['portal_sessions', 'one_time_tokens', 'invites', 'user_identities', 'users', 'departments', 'organisations']) {
    await knex.schema.dropTableIfExists(table);
  }
}
