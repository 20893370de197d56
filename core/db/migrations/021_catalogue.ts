import type { Knex } from 'knex';

/**
 * The catalogue in PostgreSQL (docs/configuration.md "Catalogue source"): providers (suppliers)
 * with their connection settings and credential — an environment variable name, or a key
 * encrypted at rest — and their models with prices, as the YAML file describes them; plus one
 * version counter that every change raises, announced so every replica reloads. The YAML file
 * seeds an empty catalogue once.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('catalogue_providers', (t) => {
    t.increments('id').primary();
    t.string('name', 63).notNullable().unique();
    t.string('protocol', 32).notNullable();
    t.text('base_url').notNullable();
    t.string('region', 32).notNullable();
    t.integer('priority').notNullable().defaultTo(100);
    t.double('weight').notNullable().defaultTo(1);
    t.integer('timeout_ms').notNullable().defaultTo(300_000);
    t.integer('connect_timeout_ms').notNullable().defaultTo(5_000);
    t.integer('first_byte_timeout_ms').nullable();
    t.string('api_key_env', 200).nullable();
    t.text('api_key_ciphertext').nullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.schema.createTable('catalogue_models', (t) => {
    t.integer('provider_id').notNullable().references('catalogue_providers.id').onDelete('CASCADE');
    t.string('model_id', 200).notNullable();
    t.integer('position').notNullable().defaultTo(0);
    // The model's entry as in the YAML file, without its id: prices, capabilities, limits.
    t.jsonb('spec').notNullable();
    t.primary(['provider_id', 'model_id']);
  });
  await knex.schema.createTable('catalogue_state', (t) => {
    t.smallint('id').primary();
    t.bigInteger('version').notNullable();
    t.integer('updated_by').nullable().references('users.id').onDelete('SET NULL');
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('catalogue_models');
  await knex.schema.dropTableIfExists('catalogue_providers');
  await knex.schema.dropTableIfExists('catalogue_state');
}
