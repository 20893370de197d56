import type { Knex } from 'knex';

/**
 * Identity providers an account's holder removed as a way in (Settings, Sign-in methods). A
 * provider links itself to an account by vouching for its address, so removing the link alone
 * would last only until its next sign-in: a refusal stops that until the holder allows it again.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('user_identity_refusals', (t) => {
    t.integer('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.string('provider', 32).notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['user_id', 'provider']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('user_identity_refusals');
}
