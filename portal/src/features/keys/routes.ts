// The dashboard's key pages (docs/portal.md "Dashboard: keys"): list, create (secret shown once),
// detail, and the changes a key's owner or their admin may make — name, models, regions, budget,
// rate limit, suspend, resume, revoke. They write the gateway's own key table and announce each
// change through the store, so every gateway replica applies it within a second.
import { Router, type Request } from 'express';
import { z } from 'zod';
import { payerForPortalKey } from '../../../../core/billing/index.js';
import { ApiError } from '../../../../core/errors/index.js';
import {
  InvalidCursorError,
  KeyAnnouncer,
  KeyRepository,
  keyStatuses,
  type KeyPatch,
  type KeyRecord,
} from '../../../../core/keys/index.js';
import type { PortalDeps } from '../../deps.js';
import { noteActivity } from '../../web/activity.js';
import { walletOfPayer } from '../billing/wallet-words.js';
import { wantsJson } from '../../web/errors.js';
import { applyPathParamRules } from '../../web/path-params.js';
import { requireAction } from '../../web/principal.js';
import { parseBody, singleString, validate, wholeNumberParam } from '../../web/validation.js';
import { formIssues, type FormIssue } from '../../web/form-issues.js';
import { checkAgainstCatalogue, keyForm, kubernetesOwned, overCurrentValues, toKeyFields, type KeyForm } from './form.js';
import { monthSpendOf, presentKey } from './present.js';
import { FormClaims, newFormToken, sentFormToken, withoutFormToken } from '../../web/form-claims.js';
import { exampleChatModel } from '../pages/catalogue-view.js';
import { mayManageKey, viewScope } from './scope.js';

const listQuery = z.strictObject({
  status: z.enum(keyStatuses, { message: `must be one of ${keyStatuses.join(', ')}` }).optional(),
  cursor: singleString(200).optional(),
  limit: wholeNumberParam(100).optional(),
});

const actionBody = z.object({
  action: z.enum(['update', 'suspend', 'resume', 'revoke'], { message: 'must be update, suspend, resume or revoke' }),
});

/** Notices shown after a change (`?notice=`), from a fixed list so the URL cannot inject text. */
const notices: Record<string, string> = {
  updated: 'Key saved. Every gateway applies the change within a second.',
  suspended: 'Key suspended: the gateway refuses it until you resume it.',
  resumed: 'Key resumed: the gateway accepts it again.',
  revoked: 'Key revoked: the gateway refuses it from now on. This cannot be undone.',
  already_created:
    'This form was already sent, and this key is what it created: its secret was shown once, then. If it was not kept, revoke this key and create a new one.',
};

export function keysRouter(deps: PortalDeps): Router {
  const router = Router();
  applyPathParamRules(router);
  const keys = new KeyRepository(deps.database, deps.settings.SVC_KEY_PEPPER);
  const announcer = new KeyAnnouncer(deps.store, { logger: (facts, message) => deps.logger.warn(facts, message) });
  const now = () => new Date(deps.clock());
  // Read per page: the catalogue may change while the portal runs (core/catalogue/live.ts).
  const choices = () => ({
    models: deps.catalogue.models.map((m) => m.id),
    regions: [...new Set(deps.catalogue.suppliers.map((s) => s.region))],
  });

  /** The key of `:key_id` when the signed-in user may manage it; otherwise 404, whoever's it is. */
  const loadKey = async (req: Request): Promise<KeyRecord> => {
    const key = await keys.findByNumber(Number(req.params.key_id));
    if (!key || !(await mayManageKey(deps.database, req.user!, key))) {
      throw new ApiError('not_found', { humanMessage: 'There is no key with this id among your keys' });
    }
    return key;
  };

  /** Announces a change; a store outage leaves it owed (retried) rather than failing the page. */
  /**
   * The submitted key form, checked against the catalogue; for a browser's form that fails, its
   * problems instead, to show the form again (JSON callers get the 422 error itself).
   */
  const readKeyForm = (
    req: Request,
    body: unknown = req.body,
  ): { form: KeyForm; issues?: undefined } | { form?: undefined; issues: FormIssue[] } => {
    try {
      const form = parseBody(keyForm, body, req.body);
      // Only what the request sent meets the catalogue: a model the catalogue has since dropped
      // from a list the update leaves alone does not stop a rename.
      const sent = (field: string) => req.body !== null && typeof req.body === 'object' && field in (req.body as object);
      checkAgainstCatalogue(deps.catalogue, {
        ...form,
        allowed_models: sent('allowed_models') ? form.allowed_models : null,
        allowed_regions: sent('allowed_regions') ? form.allowed_regions : null,
      });
      return { form };
    } catch (error) {
      if (wantsJson(req) || !(error instanceof ApiError)) throw error;
      return { issues: formIssues(error) };
    }
  };
  const formClaims = new FormClaims(deps.store, deps.logger, 'key-form');
  /** Whose wallet pays for a key, in words for the person viewing its page (none without a payer). */
  const payerWords = (req: Request, payerId: string | null) => (payerId ? walletOfPayer(deps.database, payerId, req.user!) : undefined);
  const publish = (key: KeyRecord) => announcer.announce(key.secretHash).catch(() => undefined);

  router.get('/dashboard/keys', requireAction('keys.manage'), validate({ query: listQuery }), async (req, res) => {
    const query = req.valid!.query as z.infer<typeof listQuery>;
    let page;
    try {
      page = await keys.list({ limit: query.limit ?? 50, ...viewScope(req), ...query });
    } catch (error) {
      if (error instanceof InvalidCursorError)
        throw new ApiError('validation_error', { status: 422, param: 'cursor', humanMessage: 'The cursor is not one this page gave' });
      throw error;
    }
    const at = now();
    const monthSpend = await monthSpendOf(deps.database, page.data, at);
    const data = await Promise.all(page.data.map((k) => presentKey(deps.store, deps.database, k, at, true, monthSpend)));
    if (wantsJson(req)) return res.json({ object: 'list', data, next_cursor: page.nextCursor, has_more: page.nextCursor !== null });
    res.render('dashboard/keys/list', {
      title: 'API keys',
      section: 'keys',
      keys: data,
      status: query.status ?? '',
      nextCursor: page.nextCursor,
    });
  });

  router.get('/dashboard/keys/new', requireAction('keys.manage'), (_req, res) => {
    res.render('dashboard/keys/new', {
      title: 'New API key',
      section: 'keys',
      ...choices(),
      values: {},
      formToken: newFormToken(),
      issues: [],
    });
  });

  router.post('/dashboard/keys/new', requireAction('keys.manage'), async (req, res) => {
    const token = sentFormToken(req);
    const { form, issues } = readKeyForm(req, withoutFormToken(req.body));
    if (!form) {
      // The form again with what was typed and what is wrong, rather than an error page.
      return res.status(422).render('dashboard/keys/new', {
        title: 'New API key',
        section: 'keys',
        ...choices(),
        values: req.body as object,
        formToken: token ?? newFormToken(),
        issues,
      });
    }
    const user = req.user!;
    // This form was sent before (a reload of the page that answered it, a second click): the key
    // it made, not a second one. Claimed only once the form is valid, so a corrected form still makes one.
    const made = await formClaims.makeOnce(user.id, token, async () =>
      keys.create({
        kind: 'managed',
        source: 'portal',
        ...toKeyFields(form),
        ownerUserId: user.id,
        organisationId: user.organisationId,
        // Charged to the owner's effective payer (docs/billing.md "Who pays"): their organisation's
        // billing user, a delegate, else their own wallet; none when the organisation is exempt.
        payerId: await payerForPortalKey(deps.database, user.id),
      }),
    );
    if ('already' in made) return res.redirect(303, `/dashboard/keys/${made.already}?notice=already_created`);
    const { record, secret } = made.made;
    await noteActivity(deps, {
      userId: user.id,
      kind: 'key_created',
      summary: `Created key “${record.name}”`,
      details: { key_id: record.number },
    });
    // A new key needs no announcement to work (the gateway looks unknown keys up), but a replica
    // may hold a negative cache entry for this hash: announce like every change.
    await publish(record);
    const key = await presentKey(deps.store, deps.database, record, now(), false);
    res.status(201);
    if (wantsJson(req)) return res.json({ key, secret });
    res.set('cache-control', 'no-store');
    res.render('dashboard/keys/created', {
      title: 'Key created',
      section: 'keys',
      key,
      payerWords: await payerWords(req, key.payer_id),
      secret,
      gatewayUrl: deps.gatewayUrlHint,
      model: exampleChatModel(deps.catalogue),
    });
  });

  router.get('/dashboard/keys/:key_id', requireAction('keys.manage'), async (req, res) => {
    const key = await presentKey(deps.store, deps.database, await loadKey(req), now());
    if (wantsJson(req)) return res.json(key);
    const notice = typeof req.query.notice === 'string' ? notices[req.query.notice] : undefined;
    res.render('dashboard/keys/detail', {
      title: key.name,
      section: 'keys',
      key,
      payerWords: await payerWords(req, key.payer_id),
      ...choices(),
      notice,
      issues: [],
    });
  });

  router.post('/dashboard/keys/:key_id', requireAction('keys.manage'), async (req, res) => {
    const key = await loadKey(req);
    const { action } = parseBody(actionBody, req.body);
    if (key.source === 'crd') throw kubernetesOwned(key.number);
    if (key.status === 'revoked') throw new ApiError('conflict', { humanMessage: 'This key is revoked; create a new one instead' });
    let patch: KeyPatch;
    if (action === 'update') {
      const body = overCurrentValues(key, req.body);
      const { form, issues } = readKeyForm(req, body);
      if (!form) {
        // The key's page again, the edits kept and the problems named (as the create form does).
        const presented = await presentKey(deps.store, deps.database, key, now());
        return res.status(422).render('dashboard/keys/detail', {
          title: presented.name,
          section: 'keys',
          key: presented,
          payerWords: await payerWords(req, presented.payer_id),
          ...choices(),
          notice: undefined,
          values: body,
          issues,
        });
      }
      patch = toKeyFields(form);
    } else patch = { status: action === 'suspend' ? 'suspended' : action === 'resume' ? 'active' : 'revoked' };
    const updated = (await keys.update(key.id, patch))!;
    await publish(updated);
    if (key.ownerUserId !== null) {
      const verb = { update: 'Changed', suspend: 'Suspended', resume: 'Resumed', revoke: 'Revoked' }[action];
      const actor = req.user!.id === key.ownerUserId ? null : req.user!.id;
      await noteActivity(deps, {
        userId: key.ownerUserId,
        actorUserId: actor,
        kind:
          action === 'update'
            ? 'key_updated'
            : action === 'suspend'
              ? 'key_suspended'
              : action === 'resume'
                ? 'key_resumed'
                : 'key_revoked',
        summary: `${verb} key “${updated.name}”${actor === null ? '' : ' (by an administrator)'}`,
        details: { key_id: key.number },
      });
    }
    if (wantsJson(req)) return res.json(await presentKey(deps.store, deps.database, updated, now()));
    const notice = { update: 'updated', suspend: 'suspended', resume: 'resumed', revoke: 'revoked' }[action];
    res.redirect(303, `/dashboard/keys/${key.number}?notice=${notice}`);
  });

  return router;
}
