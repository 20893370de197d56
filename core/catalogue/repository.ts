// The catalogue in PostgreSQL (migration 021): read back as the YAML file's document and built by
// the same buildCatalogue — one schema, one validation, whether the catalogue comes from a file
// or from here. Every change runs in a transaction that locks the version row, validates the
// whole resulting catalogue and raises the version; the caller announces it (live.ts).
import type { Knex } from 'knex';
import { buildCatalogue, ConfigError, type Catalogue } from '../config/index.js';
import { ApiError } from '../errors/index.js';
import { decryptCredential } from './credentials.js';

/** A provider row. */
export interface ProviderRow {
  id: number;
  name: string;
  protocol: string;
  base_url: string;
  region: string;
  priority: number;
  weight: number;
  timeout_ms: number;
  connect_timeout_ms: number;
  first_byte_timeout_ms: number | null;
  api_key_env: string | null;
  api_key_ciphertext: string | null;
  /** The credential pool (migration 025): each a name and an environment variable or an encrypted key. */
  credentials: StoredCredential[] | null;
}

/** One stored credential of a provider's pool. */
export interface StoredCredential {
  name: string;
  api_key_env?: string;
  api_key_ciphertext?: string;
}

/** A model row: its YAML entry without the id. */
export interface ModelRow {
  provider_id: number;
  model_id: string;
  position: number;
  spec: Record<string, unknown>;
}

/** A provider row as its catalogue-file entry (without credential) and its models. */
export function supplierEntry(p: ProviderRow, models: readonly ModelRow[]) {
  return {
    name: p.name,
    protocol: p.protocol,
    base_url: p.base_url,
    region: p.region,
    priority: p.priority,
    weight: Number(p.weight),
    timeout_ms: p.timeout_ms,
    connect_timeout_ms: p.connect_timeout_ms,
    ...(p.first_byte_timeout_ms !== null && { first_byte_timeout_ms: p.first_byte_timeout_ms }),
    models: models.filter((m) => m.provider_id === p.id).map((m) => ({ id: m.model_id, ...m.spec })),
  };
}

/** The environment variable a stored credential is handed to buildCatalogue under. */
const storedKeyVariable = (provider: string, credential?: string) =>
  `SVC_STORED_SUPPLIER_KEY_${provider.toUpperCase().replace(/-/g, '_')}${credential ? `__${credential.toUpperCase().replace(/[^A-Z0-9]/g, '_')}` : ''}`;

/** The catalogue document (the YAML file's shape) and the environment it is built with. */
export async function readDatabaseDocument(
  knex: Knex,
  env: Record<string, string | undefined>,
  pepper: string,
): Promise<{ document: { suppliers: Record<string, unknown>[] }; env: Record<string, string | undefined> }> {
  const providers = (await knex('catalogue_providers').orderBy('id')) as ProviderRow[];
  const models = (await knex('catalogue_models').orderBy(['provider_id', 'position', 'model_id'])) as ModelRow[];
  const built: Record<string, string | undefined> = { ...env };
  const suppliers = providers.map((p) => {
    let apiKeyEnv = p.api_key_env ?? undefined;
    if (p.api_key_ciphertext) {
      apiKeyEnv = storedKeyVariable(p.name);
      try {
        built[apiKeyEnv] = decryptCredential(p.api_key_ciphertext, pepper);
      } catch {
        // Encrypted with another pepper: buildCatalogue then names the provider's missing key.
        built[apiKeyEnv] = undefined;
      }
    }
    const credentials = p.credentials?.map((c) => {
      if (!c.api_key_ciphertext) return { name: c.name, api_key_env: c.api_key_env };
      const variable = storedKeyVariable(p.name, c.name);
      try {
        built[variable] = decryptCredential(c.api_key_ciphertext, pepper);
      } catch {
        built[variable] = undefined;
      }
      return { name: c.name, api_key_env: variable };
    });
    return {
      ...supplierEntry(p, models),
      ...(apiKeyEnv && { api_key_env: apiKeyEnv }),
      ...(credentials && credentials.length > 0 && { credentials }),
    };
  });
  return { document: { suppliers }, env: built };
}

/** The version of the stored catalogue; 0 when it was never seeded. */
export async function catalogueVersion(knex: Knex): Promise<number> {
  const row = (await knex('catalogue_state').where({ id: 1 }).first('version')) as { version: string | number } | undefined;
  return row ? Number(row.version) : 0;
}

/**
 * The stored catalogue built, with its version, when its version is above `after`; undefined
 * when the database holds none yet or nothing newer (so a reload reads the version once).
 */
export async function loadDatabaseCatalogue(
  knex: Knex,
  env: Record<string, string | undefined>,
  pepper: string,
  after = 0,
): Promise<{ catalogue: Catalogue; version: number } | undefined> {
  const version = await catalogueVersion(knex);
  if (version <= after) return undefined;
  const { document, env: built } = await readDatabaseDocument(knex, env, pepper);
  return { catalogue: buildCatalogue(document, built, 'database catalogue'), version };
}

/** Inserts one supplier of a (validated) document; returns its provider id. */
export async function insertSupplier(
  trx: Knex,
  supplier: Record<string, unknown>,
  ciphertext: string | null = null,
  pool: StoredCredential[] | null = null,
): Promise<number> {
  // A file's pool names environment variables; the admin page may give encrypted keys instead.
  const credentials = pool ?? (supplier.credentials as StoredCredential[] | undefined) ?? null;
  const [row] = (await trx('catalogue_providers')
    .insert({
      name: supplier.name,
      protocol: supplier.protocol,
      base_url: supplier.base_url,
      region: supplier.region,
      priority: supplier.priority ?? 100,
      weight: supplier.weight ?? 1,
      timeout_ms: supplier.timeout_ms ?? 300_000,
      connect_timeout_ms: supplier.connect_timeout_ms ?? 5_000,
      first_byte_timeout_ms: supplier.first_byte_timeout_ms ?? null,
      api_key_env: ciphertext ? null : (supplier.api_key_env ?? null),
      api_key_ciphertext: ciphertext,
      credentials: credentials ? JSON.stringify(credentials) : null,
    })
    .returning('id')) as { id: number }[];
  await replaceModels(trx, row!.id, (supplier.models as Record<string, unknown>[] | undefined) ?? []);
  return row!.id;
}

/** Replaces a provider's models with these YAML model entries, in order. */
export async function replaceModels(trx: Knex, providerId: number, models: Record<string, unknown>[]): Promise<void> {
  await trx('catalogue_models').where({ provider_id: providerId }).delete();
  if (models.length === 0) return;
  await trx('catalogue_models').insert(
    models.map((m, position) => {
      const { id, ...spec } = m;
      return { provider_id: providerId, model_id: String(id), position, spec: JSON.stringify(spec) };
    }),
  );
}

/**
 * Seeds an empty database catalogue from the file's document (already validated by building
 * it). Two replicas starting together: the version row is created once, and only the one that
 * created it inserts. Returns whether this call seeded.
 */
export async function seedDatabaseCatalogue(knex: Knex, document: unknown): Promise<boolean> {
  return knex.transaction(async (trx) => {
    const created = (await trx('catalogue_state').insert({ id: 1, version: 1 }).onConflict('id').ignore().returning('id')) as unknown[];
    if (created.length === 0) return false;
    for (const supplier of (document as { suppliers: Record<string, unknown>[] }).suppliers) await insertSupplier(trx, supplier);
    return true;
  });
}

/**
 * Runs one change of the stored catalogue: locks the version row, applies `change`, builds the
 * resulting catalogue (any problem → 422 naming it, and nothing is kept) and raises the version.
 * Returns the new version and what `change` returned.
 */
export async function changeDatabaseCatalogue<T>(
  knex: Knex,
  options: { env: Record<string, string | undefined>; pepper: string; actorId: number | null },
  change: (trx: Knex.Transaction) => Promise<T>,
): Promise<{ version: number; result: T }> {
  return knex.transaction(async (trx) => {
    const state = (await trx('catalogue_state').where({ id: 1 }).forUpdate().first('version')) as { version: string | number } | undefined;
    if (!state) throw new ApiError('conflict', { humanMessage: 'The catalogue has not been seeded yet: start a gateway once first' });
    const result = await change(trx);
    const { document, env } = await readDatabaseDocument(trx, options.env, options.pepper);
    if (document.suppliers.length === 0) throw new ApiError('conflict', { humanMessage: 'The catalogue must keep at least one provider' });
    try {
      buildCatalogue(document, env, 'catalogue');
    } catch (error) {
      if (error instanceof ConfigError)
        throw new ApiError('validation_error', { status: 422, humanMessage: error.message.replace(/^invalid catalogue:\n\s*-\s*/, '') });
      throw error;
    }
    const version = Number(state.version) + 1;
    await trx('catalogue_state').where({ id: 1 }).update({ version, updated_by: options.actorId, updated_at: trx.fn.now() });
    return { version, result };
  });
}
