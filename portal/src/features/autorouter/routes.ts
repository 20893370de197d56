// The autorouter pages (docs/autorouter.md):
//   GET  /dashboard/autorouter            what `auto` chose for the caller's keys (days, compare)
//                                         and the preferences it honours, with their forms
//   GET  /dashboard/api/autorouter        the same as JSON
//   POST /dashboard/autorouter/user       the signed-in user's preference (all their keys)
//   POST /dashboard/autorouter/api-key    one key's preference ({key_id}, the key's owner or admin)
//   POST /dashboard/admin/autorouter/api-key  an administrator's override of a key
//   POST /dashboard/admin/autorouter/org      an organisation's policy ({org_id} for platform admins)
// Each update takes {mode, prefer, exclude} or {action: clear}, and is announced for every key it
// affects, so the gateways apply it from their next request.
import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import {
  autorouterLayer,
  autorouterLayersOf,
  autorouterLayersOfKeys,
  autorouterReport,
  defaultComparisonModel,
  effectiveAutorouterPolicy,
  saveAutorouterLayer,
  type AutorouterLayer,
  type AutorouterLayerName,
} from '../../../../core/autorouter/index.js';
import { ApiError } from '../../../../core/errors/index.js';
import { isAllowed } from '../../../../core/identity/index.js';
import { KeyAnnouncer, KeyRepository, type KeyRecord } from '../../../../core/keys/index.js';
import type { PortalDeps } from '../../deps.js';
import { adminRoute } from '../admin/route-table.js';
import { noteActivity } from '../../web/activity.js';
import { wantsJson } from '../../web/errors.js';
import { requireAction } from '../../web/principal.js';
import { idField, targetOrganisation } from '../../web/target-organisation.js';
import { parseBody, singleString, validate, wholeNumberParam } from '../../web/validation.js';
import { helpPanels, isHelpHidden } from '../help/panels.js';
import { kubernetesOwned } from '../keys/form.js';
import { mayManageKey, viewScope } from '../keys/scope.js';
import { layerBody, toLayer } from './form.js';

const reportQuery = z.strictObject({
  days: wholeNumberParam(366, 'days').optional(),
  compare: singleString(200).optional(),
  notice: singleString(40).optional(),
});

const keyBody = layerBody.extend({ key_id: idField });
const orgBody = layerBody.extend({ org_id: idField.optional() });

/** Notices after an update (`?notice=`), from a fixed list so the URL cannot inject text. */
const notices: Record<string, string> = {
  user: 'Your preference is saved; every gateway applies it from your next request.',
  key: 'The key’s preference is saved; every gateway applies it from the next request.',
  override: 'The override is saved; the key’s owner sees it and cannot change it.',
  organisation: 'The organisation’s policy is saved for every member’s keys.',
};

/** Most keys listed with their policies on the page (the JSON has the same bound). */
const keysShown = 100;

export function autorouterRouter(deps: PortalDeps): Router {
  const router = Router();
  const knex = deps.database;
  const keys = new KeyRepository(knex, deps.settings.SVC_KEY_PEPPER);
  const announcer = new KeyAnnouncer(deps.store, { logger: (facts, message) => deps.logger.warn(facts, message) });
  // Read per page: the catalogue may change while the portal runs (core/catalogue/live.ts).
  const chatModels = () =>
    [...deps.catalogue.routes]
      .filter(([, routes]) => routes.some((r) => r.model.capabilities.includes('chat')))
      .map(([id]) => id)
      .sort();

  /** The report and every policy the caller can see: theirs, their organisation's, their keys'. */
  const overview = async (req: Request) => {
    const q = req.valid!.query as z.infer<typeof reportQuery>;
    if (q.compare !== undefined && !deps.catalogue.routes.has(q.compare))
      throw new ApiError('validation_error', {
        status: 422,
        param: 'compare',
        humanMessage: `${q.compare} is not a model of this platform`,
      });
    const user = req.user!;
    const scope = viewScope(req);
    const report = await autorouterReport(knex, deps.catalogue, {
      scope,
      days: q.days ?? 30,
      now: new Date(deps.clock()),
      compareModel: q.compare,
    });
    const listed = (await keys.list({ ...scope, kind: 'managed', limit: keysShown })).data.filter((k) => k.status !== 'revoked');
    const layers = await autorouterLayersOfKeys(
      knex,
      listed.map((k) => ({ keyId: k.id, ownerUserId: k.ownerUserId, organisationId: k.organisationId })),
    );
    const own = await autorouterLayersOf(knex, { keyId: '', ownerUserId: user.id, organisationId: user.organisationId });
    return {
      report,
      preferences: {
        user: own.user ?? null,
        organisation: own.organisation ?? null,
        // What a new key of the caller would get.
        effective: effectiveAutorouterPolicy({ user: own.user, organisation: own.organisation }),
      },
      keys: listed.map((k) => {
        const l = layers.get(k.id)!;
        return {
          key_id: k.number,
          name: k.name,
          owner_user_id: k.ownerUserId,
          kubernetes: k.source === 'crd',
          key: l.key ?? null,
          override: l.keyOverride ?? null,
          effective: effectiveAutorouterPolicy(l),
        };
      }),
    };
  };

  router.get('/dashboard/api/autorouter', requireAction('autorouter.manage'), validate({ query: reportQuery }), async (req, res) => {
    res.json(await overview(req));
  });

  router.get('/dashboard/autorouter', requireAction('autorouter.manage'), validate({ query: reportQuery }), async (req, res) => {
    const data = await overview(req);
    const user = req.user!;
    const q = req.valid!.query as z.infer<typeof reportQuery>;
    res.render('dashboard/autorouter/index', {
      title: 'Autorouter',
      section: 'autorouter',
      ...data,
      models: chatModels(),
      compareDefault: defaultComparisonModel(deps.catalogue),
      notice: q.notice ? notices[q.notice] : undefined,
      canOverride: isAllowed(user, 'autorouter.override'),
      canOrganisation: user.organisationId !== null && isAllowed(user, 'autorouter.organisation'),
      help: helpPanels.autorouter,
      helpHidden: await isHelpHidden(knex, user.id, 'autorouter'),
      chartData: JSON.stringify({
        labels: data.report.daily.map((d) => d.date),
        models: data.report.models
          .slice(0, 8)
          .map((m) => ({ label: m.model, requests: data.report.daily.map((d) => d.models[m.model] ?? 0) })),
        cost: data.report.daily.map((d) => d.cost_usd),
        comparison: data.report.daily.map((d) => d.comparison_cost_usd),
      }).replace(/</g, '\\u003c'),
    });
  });

  /** Saves a layer, announces it to the gateways, notes it in the owner's activity and answers. */
  const save = async (
    req: Request,
    res: Response,
    target: { layer: AutorouterLayerName; subject: string | number; activityUserId: number | null; what: string },
    layer: AutorouterLayer | null,
    notice: string,
  ) => {
    const user = req.user!;
    const hashes = await saveAutorouterLayer(knex, target.layer, target.subject, layer, user.id);
    // A store outage leaves announcements owed (retried); the database already holds the change.
    await announcer.announceAll(hashes);
    if (target.activityUserId !== null)
      await noteActivity(deps, {
        userId: target.activityUserId,
        actorUserId: target.activityUserId === user.id ? null : user.id,
        kind: 'autorouter_changed',
        summary: `${layer === null ? 'Cleared' : 'Changed'} the autorouter ${target.what}`,
        details: {
          layer: target.layer,
          subject: String(target.subject),
          mode: layer?.mode ?? null,
          prefer: layer?.prefer?.join(', ') ?? null,
          exclude: layer?.exclude?.join(', ') ?? null,
        },
      });
    if (wantsJson(req))
      return res.json({
        ok: true,
        layer: target.layer,
        policy: (await autorouterLayer(knex, target.layer, target.subject)) ?? null,
        keys_updated: hashes.length,
      });
    res.redirect(303, `/dashboard/autorouter?notice=${notice}`);
  };

  /** The key of `key_id` when the caller may act on it with `action`; otherwise 404. */
  const loadKey = async (req: Request, keyNumber: number, action: 'autorouter.manage' | 'autorouter.override'): Promise<KeyRecord> => {
    const key = await keys.findByNumber(keyNumber);
    if (!key || key.kind !== 'managed' || !(await mayManageKey(knex, req.user!, key, action)))
      throw new ApiError('not_found', { param: 'key_id', humanMessage: 'There is no key with this id among the keys you may change' });
    if (key.status === 'revoked')
      throw new ApiError('conflict', { humanMessage: 'This key is revoked; its autorouter policy no longer matters' });
    return key;
  };

  router.post('/dashboard/autorouter/user', requireAction('autorouter.manage'), async (req, res) => {
    const layer = toLayer(deps.catalogue, parseBody(layerBody, req.body));
    const user = req.user!;
    await save(req, res, { layer: 'user', subject: user.id, activityUserId: user.id, what: 'preference of your keys' }, layer, 'user');
  });

  router.post('/dashboard/autorouter/api-key', requireAction('autorouter.manage'), async (req, res) => {
    const body = parseBody(keyBody, req.body);
    const key = await loadKey(req, body.key_id, 'autorouter.manage');
    // The operator owns a Kubernetes key's every setting; an administrator's override still applies.
    if (key.source === 'crd') throw kubernetesOwned(key.number);
    const layer = toLayer(deps.catalogue, body);
    await save(
      req,
      res,
      { layer: 'key', subject: key.id, activityUserId: key.ownerUserId, what: `preference of key “${key.name}”` },
      layer,
      'key',
    );
  });

  adminRoute(router, 'POST', '/dashboard/admin/autorouter/api-key', async (req, res) => {
    const body = parseBody(keyBody, req.body);
    const key = await loadKey(req, body.key_id, 'autorouter.override');
    const layer = toLayer(deps.catalogue, body);
    await save(
      req,
      res,
      {
        layer: 'key_override',
        subject: key.id,
        activityUserId: key.ownerUserId,
        what: `override of key “${key.name}” (by an administrator)`,
      },
      layer,
      'override',
    );
  });

  adminRoute(router, 'POST', '/dashboard/admin/autorouter/org', async (req, res) => {
    const body = parseBody(orgBody, req.body);
    const organisationId = targetOrganisation(req, body.org_id);
    const exists = await knex('organisations').where({ id: organisationId }).first('id');
    if (!exists) throw new ApiError('not_found', { param: 'org_id', humanMessage: 'There is no such organisation' });
    const layer = toLayer(deps.catalogue, body);
    await save(
      req,
      res,
      { layer: 'organisation', subject: organisationId, activityUserId: req.user!.id, what: `policy of organisation #${organisationId}` },
      layer,
      'organisation',
    );
  });

  return router;
}
