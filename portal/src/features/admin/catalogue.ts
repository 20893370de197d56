// Providers, models and prices (docs/administration.md "Providers, models and prices"):
//   GET  /dashboard/admin/models                         tabs: models, providers, prices (JSON: everything)
//   POST /dashboard/admin/providers                      create a provider with its models (AJAX JSON)
//   POST /dashboard/admin/providers/{provider_id}/update change its settings, key, credential pool or models
//   POST /dashboard/admin/providers/{provider_id}/delete remove it (the catalogue keeps at least one)
//   POST /dashboard/admin/prices                         one model's prices at one provider
//   GET  /dashboard/admin/prices                         → the models page, prices tab
// Changes need SVC_CATALOG_SOURCE=database; each is validated as a whole catalogue, stored with a
// new version and announced, so every gateway replica serves it from its next request.
import { Router, type Request, type Response } from 'express';
import type { Knex } from 'knex';
import { z } from 'zod';
import {
  announceCatalogueChange,
  changeCredentialPool,
  changeDatabaseCatalogue,
  checkSupplierUrl,
  encryptCredential,
  insertSupplier,
  presentCredentialPool,
  replaceModels,
  supplierEntry,
  type ModelRow,
  type ProviderRow,
} from '../../../../core/catalogue/index.js';
import { supplierProtocols } from '../../../../core/config/index.js';
import { ApiError } from '../../../../core/errors/index.js';
import { recordCredentialEvents } from '../../../../core/routing/index.js';
import type { PortalDeps } from '../../deps.js';
import { wantsJson } from '../../web/errors.js';
import { applyPathParamRules } from '../../web/path-params.js';
import { idField } from '../../web/target-organisation.js';
import { parseBody, validationError } from '../../web/validation.js';
import { emptyFormPage, withFormPage, type FormPage } from '../../web/form-issues.js';
import { adminRoute } from './route-table.js';

const priceFields = [
  'input_usd_per_mtok',
  'output_usd_per_mtok',
  'cached_input_usd_per_mtok',
  'cache_write_input_usd_per_mtok',
  'usd_per_audio_minute',
  'usd_per_mchar',
] as const;
const price = z.union(
  [
    z.number().nonnegative().max(1_000_000),
    z.literal('').transform(() => undefined),
    z
      .string()
      .trim()
      .regex(/^\d{1,7}(\.\d{1,9})?$/, 'must be a price in USD')
      .transform(Number),
  ],
  {
    message: 'must be a price in USD (0 or more)',
  },
);
const integer = (max: number) =>
  z
    .union([
      z.number().int().positive().max(max),
      z
        .string()
        .regex(/^\d{1,9}$/)
        .transform(Number),
    ])
    .refine((n) => n > 0 && n <= max, `must be a whole number from 1 to ${max}`);
/** A model entry as in the YAML catalogue; the catalogue schema checks the rest when it is built. */
const modelEntry = z.record(z.string(), z.unknown()).refine((m) => typeof m.id === 'string' && m.id.length > 0, 'each model needs an id');

const providerFields = {
  protocol: z.enum(supplierProtocols, { message: `must be one of ${supplierProtocols.join(', ')}` }),
  base_url: z.string().trim().max(2000),
  region: z.string().trim().toUpperCase().max(32),
  priority: z.union([
    z.number().int().min(0).max(1_000_000),
    z
      .string()
      .regex(/^\d{1,7}$/)
      .transform(Number),
  ]),
  weight: z.union([
    z.number().positive().max(1_000_000),
    z
      .string()
      .regex(/^\d{1,7}(\.\d{1,6})?$/)
      .transform(Number),
  ]),
  timeout_ms: integer(3_600_000),
  connect_timeout_ms: integer(60_000),
  /** The supplier's API key: stored encrypted, never shown back. Empty clears it. */
  api_key: z.string().max(4000),
  /** Or the environment variable (a Kubernetes Secret mounted as env) holding it. */
  api_key_env: z.union([z.string().regex(/^[A-Z_][A-Z0-9_]*$/, 'must be an environment variable name'), z.literal('')]),
  models: z.array(modelEntry).min(1, 'a provider needs at least one model').max(500),
  /**
   * The credential pool, whole (docs/routing.md "Credential pools"): each entry a name and a new
   * `api_key` (stored encrypted), an `api_key_env`, or neither to keep that name's stored key;
   * `[]` removes the pool.
   */
  credentials: z
    .array(
      z
        .strictObject({
          name: z.string().regex(/^[a-z0-9][a-z0-9._-]{0,62}$/, 'must be lower-case letters, digits, dots, dashes and underscores'),
          api_key: z.string().min(1).max(4000).optional(),
          api_key_env: z
            .string()
            .regex(/^[A-Z_][A-Z0-9_]*$/, 'must be an environment variable name')
            .optional(),
        })
        .refine((c) => c.api_key === undefined || c.api_key_env === undefined, 'give api_key or api_key_env, not both'),
    )
    .max(32, 'a pool holds at most 32 credentials'),
};
const createBody = z.object({ name: z.string().trim().max(63), ...providerFields }).partial({
  priority: true,
  weight: true,
  timeout_ms: true,
  connect_timeout_ms: true,
  api_key: true,
  api_key_env: true,
  credentials: true,
});
// Strict: a field it does not know (the name, which is the provider's identity, or a misspelling)
// is a 422 naming it, not a 200 that changed nothing.
const updateBody = z
  .strictObject(providerFields)
  .partial()
  .refine((b) => Object.keys(b).length > 0, { message: `send at least one of ${Object.keys(providerFields).join(', ')}` });
const priceBody = z
  .object({
    provider_id: idField,
    model_id: z.string().trim().min(1).max(200),
    ...Object.fromEntries(priceFields.map((f) => [f, price.optional()])),
  })
  .refine((b) => priceFields.some((f) => (b as Record<string, unknown>)[f] !== undefined), {
    message: `send at least one of ${priceFields.join(', ')}`,
    path: ['input_usd_per_mtok'],
  });

/**
 * A form sends the model list as the JSON text typed in its box: read as the list a JSON caller
 * sends, or named as the problem. Anything else is left for the schema.
 */
function modelsFromForm(body: unknown): unknown {
  if (typeof body !== 'object' || body === null || typeof (body as { models?: unknown }).models !== 'string') return body;
  try {
    return { ...body, models: JSON.parse((body as { models: string }).models) as unknown };
  } catch (error) {
    throw validationError([{ loc: ['body', 'models'], msg: `must be a JSON list of models: ${(error as Error).message}`, type: 'json' }]);
  }
}

/** A provider as the admin page shows it: never its key, only whether and where it has one. */
function presentProvider(p: ProviderRow, models: ModelRow[]) {
  return {
    provider_id: p.id,
    ...supplierEntry(p, models),
    api_key: p.api_key_ciphertext ? 'stored' : p.api_key_env ? `env:${p.api_key_env}` : null,
    credentials: presentCredentialPool(p.credentials),
  };
}

export function adminCatalogueRouter(deps: PortalDeps): Router {
  const router = Router();
  applyPathParamRules(router);
  const knex = deps.database;
  const settings = deps.settings;
  const databaseMode = settings.SVC_CATALOG_SOURCE === 'database';

  const overview = async () => {
    const providers = (await knex('catalogue_providers').orderBy('name')) as ProviderRow[];
    const models = (await knex('catalogue_models').orderBy(['provider_id', 'position'])) as ModelRow[];
    const presented = providers.map((p) => presentProvider(p, models));
    const version = (await knex('catalogue_state').where({ id: 1 }).first('version', 'updated_at')) as
      { version: string | number; updated_at: Date } | undefined;
    return {
      source: settings.SVC_CATALOG_SOURCE,
      version: version ? Number(version.version) : 0,
      updated_at: version ? new Date(version.updated_at).toISOString() : null,
      providers: presented,
    };
  };

  /** One change of the stored catalogue, announced to every replica; 409 in file mode. */
  const change = async <T>(req: Request, apply: (trx: Knex.Transaction) => Promise<T>) => {
    if (!databaseMode)
      throw new ApiError('conflict', {
        humanMessage: 'The catalogue is managed by its file here (SVC_CATALOG_SOURCE=file): change the file instead',
      });
    const { version, result } = await changeDatabaseCatalogue(
      knex,
      { env: process.env, pepper: settings.SVC_KEY_PEPPER, actorId: req.user!.id },
      apply,
    );
    await announceCatalogueChange(deps.store, version).catch((error: unknown) =>
      deps.logger.warn({ err: error, version }, 'catalogue saved; replicas pick it up within 30 s (store unreachable)'),
    );
    deps.logger.info({ version, by: req.user!.id }, 'catalogue changed');
    return { version, result };
  };

  const answer = async (req: Request, res: Response, status: number, extra: Record<string, unknown>, tab: string) => {
    if (wantsJson(req)) return res.status(status).json({ ok: true, ...extra, catalogue: await overview() });
    res.redirect(303, `/dashboard/admin/models?tab=${tab}`);
  };

  const credentialOf = (body: { api_key?: string | undefined }) =>
    body.api_key === undefined || body.api_key === '' ? null : encryptCredential(body.api_key, settings.SVC_KEY_PEPPER);

  /** The page at a tab; after a refused new provider, with its status, each problem and what was typed (never the key). */
  const showPage = async (res: Response, tab: string, status = 200, form: FormPage = emptyFormPage) => {
    const { api_key: _secret, ...typed } = form.values;
    res.status(status).render('dashboard/admin/models/index', {
      title: 'Models and providers',
      section: 'admin-models',
      ...(await overview()),
      tab,
      protocols: supplierProtocols,
      priceFields,
      issues: form.issues,
      values: typed,
    });
  };

  adminRoute(router, 'GET', '/dashboard/admin/models', async (req, res) => {
    if (wantsJson(req)) return res.json(await overview());
    await showPage(res, ['models', 'providers', 'prices'].includes(String(req.query.tab)) ? String(req.query.tab) : 'models');
  });

  adminRoute(router, 'GET', '/dashboard/admin/prices', (_req, res) => {
    res.redirect(303, '/dashboard/admin/models?tab=prices');
  });

  adminRoute(router, 'POST', '/dashboard/admin/providers', (req, res) =>
    withFormPage(
      req,
      res,
      () => createProvider(req, res),
      (status, form) => showPage(res, 'providers', status, form),
    ),
  );

  const createProvider = async (req: Request, res: Response) => {
    const body = parseBody(createBody, modelsFromForm(req.body));
    checkSupplierUrl(body.base_url, settings.SVC_ALLOW_LINK_LOCAL_SUPPLIERS);
    const { result: id } = await change(req, async (trx) => {
      if (await trx('catalogue_providers').where({ name: body.name }).first('id'))
        throw new ApiError('conflict', { param: 'name', humanMessage: `A provider named ${body.name} exists already` });
      const { api_key: _secret, credentials: requested, ...supplier } = body;
      const { pool, events } = changeCredentialPool(body.name, null, requested ?? [], settings.SVC_KEY_PEPPER, new Date(deps.clock()));
      const id = await insertSupplier(
        trx,
        { ...supplier, ...(body.api_key_env === '' && { api_key_env: undefined }) },
        credentialOf(body),
        pool,
      );
      await recordCredentialEvents(trx, events);
      return id;
    });
    await answer(req, res, 201, { provider_id: id }, 'providers');
  };

  adminRoute(router, 'POST', '/dashboard/admin/providers/:provider_id/update', async (req, res) => {
    const id = Number(req.params.provider_id);
    const body = parseBody(updateBody, req.body);
    if (body.base_url !== undefined) checkSupplierUrl(body.base_url, settings.SVC_ALLOW_LINK_LOCAL_SUPPLIERS);
    await change(req, async (trx) => {
      const found = (await trx('catalogue_providers').where({ id }).first('id', 'name', 'credentials')) as
        Pick<ProviderRow, 'id' | 'name' | 'credentials'> | undefined;
      if (!found) throw new ApiError('not_found', { param: 'provider_id', humanMessage: 'There is no such provider' });
      const { models, api_key, api_key_env, credentials: requested, ...fields } = body;
      if (requested !== undefined) {
        const { pool, events } = changeCredentialPool(
          found.name,
          found.credentials,
          requested,
          settings.SVC_KEY_PEPPER,
          new Date(deps.clock()),
        );
        await trx('catalogue_providers')
          .where({ id })
          .update({ credentials: pool ? JSON.stringify(pool) : null });
        await recordCredentialEvents(trx, events);
      }
      const credential =
        api_key !== undefined
          ? { api_key_ciphertext: credentialOf({ api_key }), api_key_env: null }
          : api_key_env !== undefined
            ? { api_key_env: api_key_env || null, api_key_ciphertext: null }
            : {};
      await trx('catalogue_providers')
        .where({ id })
        .update({ ...fields, ...credential, updated_at: trx.fn.now() });
      if (models) await replaceModels(trx, id, models);
    });
    await answer(req, res, 200, { provider_id: id }, 'providers');
  });

  adminRoute(router, 'POST', '/dashboard/admin/providers/:provider_id/delete', async (req, res) => {
    const id = Number(req.params.provider_id);
    await change(req, async (trx) => {
      const deleted = await trx('catalogue_providers').where({ id }).delete();
      if (deleted === 0) throw new ApiError('not_found', { param: 'provider_id', humanMessage: 'There is no such provider' });
    });
    await answer(req, res, 200, { deleted: id }, 'providers');
  });

  adminRoute(router, 'POST', '/dashboard/admin/prices', async (req, res) => {
    const body = parseBody(priceBody, req.body) as { provider_id: number; model_id: string } & Partial<
      Record<(typeof priceFields)[number], number>
    >;
    await change(req, async (trx) => {
      const row = (await trx('catalogue_models').where({ provider_id: body.provider_id, model_id: body.model_id }).first('spec')) as
        { spec: Record<string, unknown> } | undefined;
      if (!row)
        throw new ApiError('not_found', {
          param: 'model_id',
          humanMessage: `Provider ${body.provider_id} serves no model ${body.model_id}`,
        });
      const prices = Object.fromEntries(priceFields.filter((f) => body[f] !== undefined).map((f) => [f, body[f]]));
      await trx('catalogue_models')
        .where({ provider_id: body.provider_id, model_id: body.model_id })
        .update({ spec: JSON.stringify({ ...row.spec, ...prices }) });
    });
    await answer(req, res, 200, { provider_id: body.provider_id, model_id: body.model_id }, 'prices');
  });

  return router;
}
