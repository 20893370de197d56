// Autorouter layers in PostgreSQL (migration 017): one row per layer and subject. The gateway
// reads a key's layers only when it loads the key (core/keys/repository.ts findByHash), never per
// request; a change is announced for every key it affects, so the gateways reload them.
import type { Knex } from 'knex';
import type { AutorouterLayer, AutorouterMode } from './policy.js';

/** The layers stored, and what their subject is: an organisation, a user or a key id. */
export const autorouterLayerNames = ['organisation', 'user', 'key', 'key_override'] as const;
/** One stored layer. */
export type AutorouterLayerName = (typeof autorouterLayerNames)[number];

interface LayerRow {
  layer: AutorouterLayerName;
  subject: string;
  mode: AutorouterMode | null;
  prefer: string[] | null;
  exclude: string[] | null;
  updated_by: number | null;
  updated_at: Date;
}

/** A stored layer with who changed it last, for the portal's page. */
export interface StoredAutorouterLayer extends AutorouterLayer {
  updatedBy: number | null;
  updatedAt: string;
}

const TABLE = 'autorouter_policies';

function present(row: LayerRow): StoredAutorouterLayer {
  return {
    mode: row.mode,
    prefer: row.prefer,
    exclude: row.exclude,
    updatedBy: row.updated_by,
    updatedAt: new Date(row.updated_at).toISOString(),
  };
}

/** A key's layers as stored, with who changed each. */
export interface StoredAutorouterLayers {
  organisation: StoredAutorouterLayer | undefined;
  user: StoredAutorouterLayer | undefined;
  key: StoredAutorouterLayer | undefined;
  keyOverride: StoredAutorouterLayer | undefined;
}

/** The key's facts that name its layers. */
export interface AutorouterSubjects {
  keyId: string;
  ownerUserId: number | null;
  organisationId: number | null;
}

/** Every layer that applies to a key, in one query. */
export async function autorouterLayersOf(knex: Knex, subjects: AutorouterSubjects): Promise<StoredAutorouterLayers> {
  return (await autorouterLayersOfKeys(knex, [subjects])).get(subjects.keyId)!;
}

/** The layers of several keys (a page of them), in one query; keyed by key id. */
export async function autorouterLayersOfKeys(
  knex: Knex,
  keys: readonly AutorouterSubjects[],
): Promise<Map<string, StoredAutorouterLayers>> {
  const wanted = new Map<string, [AutorouterLayerName, string]>();
  const want = (layer: AutorouterLayerName, subject: string) => wanted.set(`${layer}/${subject}`, [layer, subject]);
  for (const k of keys) {
    want('key', k.keyId);
    want('key_override', k.keyId);
    if (k.ownerUserId !== null) want('user', String(k.ownerUserId));
    if (k.organisationId !== null) want('organisation', String(k.organisationId));
  }
  const rows = wanted.size === 0 ? [] : ((await knex(TABLE).whereIn(['layer', 'subject'], [...wanted.values()])) as LayerRow[]);
  const found = new Map(rows.map((r) => [`${r.layer}/${r.subject}`, present(r)]));
  return new Map(
    keys.map((k) => [
      k.keyId,
      {
        organisation: k.organisationId === null ? undefined : found.get(`organisation/${k.organisationId}`),
        user: k.ownerUserId === null ? undefined : found.get(`user/${k.ownerUserId}`),
        key: found.get(`key/${k.keyId}`),
        keyOverride: found.get(`key_override/${k.keyId}`),
      },
    ]),
  );
}

/** One stored layer, or undefined when nobody set it. */
export async function autorouterLayer(
  knex: Knex,
  layer: AutorouterLayerName,
  subject: string | number,
): Promise<StoredAutorouterLayer | undefined> {
  const row = (await knex(TABLE)
    .where({ layer, subject: String(subject) })
    .first()) as LayerRow | undefined;
  return row ? present(row) : undefined;
}

/** JSON text for a jsonb column (pg would send a JS array as a PostgreSQL array literal). */
const jsonList = (list: readonly string[] | null | undefined) => (list && list.length > 0 ? JSON.stringify(list) : null);

/**
 * Saves a layer (replacing what it said), or clears it when `value` is null or says nothing.
 * Returns the secret hashes of the keys it applies to, for the caller to announce.
 */
export async function saveAutorouterLayer(
  knex: Knex,
  layer: AutorouterLayerName,
  subject: string | number,
  value: AutorouterLayer | null,
  updatedBy: number | null,
): Promise<string[]> {
  const key = { layer, subject: String(subject) };
  const says = value !== null && (value.mode || (value.prefer?.length ?? 0) > 0 || (value.exclude?.length ?? 0) > 0);
  if (says) {
    await knex(TABLE)
      .insert({
        ...key,
        mode: value.mode ?? null,
        prefer: jsonList(value.prefer),
        exclude: jsonList(value.exclude),
        updated_by: updatedBy,
        updated_at: knex.fn.now(),
      })
      .onConflict(['layer', 'subject'])
      .merge();
  } else await knex(TABLE).where(key).delete();
  return affectedKeyHashes(knex, layer, String(subject));
}

/** Secret hashes of the keys a layer applies to. */
async function affectedKeyHashes(knex: Knex, layer: AutorouterLayerName, subject: string): Promise<string[]> {
  let keys = knex('api_keys').select('secret_hash');
  if (layer === 'organisation') keys = keys.where({ organisation_id: Number(subject) });
  else if (layer === 'user') keys = keys.where({ owner_user_id: Number(subject) });
  else keys = keys.where({ id: subject });
  return ((await keys) as { secret_hash: string }[]).map((r) => r.secret_hash);
}
