import type { Knex } from 'knex';

/**
 * The store prefix this database is bound to (core/store/binding.ts): one row, written by the
 * first deployable that starts on a shared Redis. Deployables sharing a database but not a prefix
 * would each keep their own budget counters and key cache, so a second prefix refuses to start.
 * `installation` is the random id the store records under `<prefix>installation`, so a second
 * database on the same prefix refuses too. Not filled here: a database copied from a migrated
 * template must get its own id.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('store_binding', (t) => {
    // Always 1: the primary key makes the table hold one row, and the first insert win.
    t.smallint('singleton').primary().defaultTo(1);
    t.string('prefix', 255).notNullable();
    t.string('installation', 64).notNullable();
    t.timestamp('bound_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw('alter table store_binding add constraint store_binding_one_row check (singleton = 1)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('store_binding');
}
