import type { Knex } from 'knex';

/**
 * The autorouter (docs/autorouter.md): the layers of policy `auto` honours — an organisation's
 * policy, a user's preference, a key's preference and an administrator's override of a key — one
 * row per layer and subject; and, on the audit log, whether `auto` chose the request's model,
 * with a partial index so the autorouter page reads only those rows.
 *
 * Adding a column with a constant default is a catalogue change in PostgreSQL 11+ (no rewrite of
 * the audit log); the partial index is built over the rows that have it set, none at first.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('autorouter_policies', (t) => {
    t.string('layer', 20).notNullable();
    t.string('subject', 100).notNullable();
    t.string('mode', 20).nullable();
    t.jsonb('prefer').nullable();
    t.jsonb('exclude').nullable();
    t.integer('updated_by').nullable().references('users.id').onDelete('SET NULL');
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['layer', 'subject']);
  });
  await knex.raw(
    "alter table autorouter_policies add constraint autorouter_policies_layer_check check (layer in ('organisation', 'user', 'key', 'key_override'))",
  );
  await knex.raw('alter table audit_log add column auto_routed boolean not null default false');
  await knex.raw('create index audit_log_auto_routed_idx on audit_log (key_id, ts) where auto_routed');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index if exists audit_log_auto_routed_idx');
  await knex.raw('alter table audit_log drop column if exists auto_routed');
  await knex.schema.dropTableIfExists('autorouter_policies');
}
