import type { Knex } from 'knex';

/**
 * When a key's budget period last changed (null: never since this migration). Its spend counters
 * in the store carry it in their name, so a period left and taken again starts from a counter
 * rebuilt from the audit log — the one left behind knew nothing of what the key spent under the
 * other period (an outside probe overspent a daily budget by 41 % flipping daily → monthly → daily).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('api_keys', (t) => {
    t.timestamp('budget_period_since', { useTz: true }).nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('api_keys', (t) => {
    t.dropColumn('budget_period_since');
  });
}
