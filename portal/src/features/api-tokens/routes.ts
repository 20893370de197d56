// Settings → API tokens (docs/portal.md "Settings: API tokens"): `svc_…` bearer tokens for a team
// (a department of the caller's organisation), the same gateway credentials as the Management
// API's /v1/manage/tokens (kind `token` in the keys table), authenticated, enforced and audited
// like keys. A token is paid from its creator's effective payer (the organisation's billing user
// when one is nominated), so a team spends the account's money, never a wallet of its own.
//   GET  /dashboard/settings/api-tokens                    list (HTML/JSON) and the create form
//   POST /dashboard/settings/api-tokens                    {name, department_id} → the secret, once
//   POST /dashboard/settings/api-tokens/{token_id}/revoke  revoke (every gateway within a second)
// Department admins manage their own department's tokens; org admins every department's.
import { Router, type Request } from 'express';
import { z } from 'zod';
import { payerForPortalKey } from '../../../../core/billing/index.js';
import { ApiError } from '../../../../core/errors/index.js';
import { isAllowed } from '../../../../core/identity/index.js';
import { KeyAnnouncer, KeyRepository, type KeyRecord } from '../../../../core/keys/index.js';
import type { PortalDeps } from '../../deps.js';
import { noteActivity } from '../../web/activity.js';
import { wantsJson } from '../../web/errors.js';
import { applyPathParamRules } from '../../web/path-params.js';
import { requireAction } from '../../web/principal.js';
import { integerId, parseBody, validate } from '../../web/validation.js';
import { keyListScope } from '../keys/scope.js';
import { FormClaims, newFormToken, sentFormToken, withoutFormToken } from '../../web/form-claims.js';
import { walletOfPayer } from '../billing/wallet-words.js';

/** The notice after a form sent twice (`?notice=`, from a fixed list so the URL cannot inject text). */
const notices: Record<string, string> = {
  already_created:
    'This form was sent already: the token it made is in the list below. Its secret was shown once, on the page that answered the form; if you did not copy it, revoke the token and create another.',
};

const createBody = z.object({
  name: z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters'),
  department_id: z.union(
    [
      z.number().int().positive(),
      z
        .string()
        .regex(/^[1-9][0-9]{0,9}$/, 'must be a department id')
        .transform(Number),
    ],
    {
      message: 'must be the id of a department (team) of your organisation',
    },
  ),
});

/** The department (team) a portal token was issued for. */
const departmentOf = (token: KeyRecord) => (token.metadata.department_id ? Number(token.metadata.department_id) : null);

/** A token as the page shows it: never the secret (only once, at creation) nor its hash. */
function tokenView(token: KeyRecord) {
  return {
    token_id: token.number,
    name: token.name,
    team: token.metadata.team ?? null,
    department_id: departmentOf(token),
    payer: token.payerId,
    status: token.status,
    token_hint: token.secretHint,
    created: token.createdAt,
  };
}

export function apiTokensRouter(deps: PortalDeps): Router {
  const router = Router();
  applyPathParamRules(router);
  const keys = new KeyRepository(deps.database, deps.settings.SVC_KEY_PEPPER);
  const announcer = new KeyAnnouncer(deps.store, { logger: (facts, message) => deps.logger.warn(facts, message) });
  const guard = requireAction('tokens.manage');
  const formClaims = new FormClaims(deps.store, deps.logger, 'token-form');

  /** The departments the caller may issue tokens for. */
  const departmentsFor = async (req: Request) => {
    const user = req.user!;
    if (user.organisationId === null) return [];
    const rows = (await deps
      .database('departments')
      .where({ organisation_id: user.organisationId })
      .orderBy('name')
      .select('id', 'name')) as {
      id: number;
      name: string;
    }[];
    return rows.filter((d) => isAllowed(user, 'tokens.manage', { organisationId: user.organisationId, departmentId: d.id }));
  };

  /** The tokens of the teams the caller manages (a team's token whoever in the organisation made it). */
  const listFor = async (req: Request) => {
    const user = req.user!;
    const scope = user.organisationId === null ? keyListScope(user) : { organisationId: user.organisationId };
    const page = await keys.list({ kind: 'token', limit: 200, ...scope });
    const tokens = page.data.filter(
      (t) => t.source === 'portal' && isAllowed(user, 'tokens.manage', { organisationId: t.organisationId, departmentId: departmentOf(t) }),
    );
    // Last use to the hour, from the usage rollup (nothing is written on the gateway's hot path for it).
    const rows = (await deps
      .database('usage_hourly')
      .whereIn(
        'key_id',
        tokens.map((t) => t.id),
      )
      .groupBy('key_id')
      .select('key_id')
      .max({ last: 'hour' })) as { key_id: string; last: Date | string }[];
    const used = new Map(rows.map((r) => [r.key_id, new Date(r.last).toISOString()]));
    return tokens.map((t) => ({ ...tokenView(t), last_used_hour: used.get(t.id) ?? null }));
  };

  /**
   * The rows as the page shows them: whose wallet pays in words, as the key pages say it (the
   * payer id, `user:3`, is the API's reference, not something a person recognises). One look-up
   * per payer: a team's tokens mostly share one.
   */
  const withPayerWords = async <T extends { payer: string | null }>(req: Request, tokens: T[]) => {
    const words = new Map<string, Promise<string>>();
    const wordsOf = (payerId: string) => {
      if (!words.has(payerId)) words.set(payerId, walletOfPayer(deps.database, payerId, req.user!));
      return words.get(payerId)!;
    };
    return Promise.all(tokens.map(async (t) => ({ ...t, payer_words: t.payer ? await wordsOf(t.payer) : null })));
  };

  router.get('/dashboard/settings/api-tokens', guard, async (req, res) => {
    const tokens = await listFor(req);
    if (wantsJson(req)) return res.json({ object: 'list', data: tokens });
    res.render('dashboard/settings/api-tokens', {
      title: 'API tokens',
      section: 'api-tokens',
      tokens: await withPayerWords(req, tokens),
      departments: await departmentsFor(req),
      created: null,
      gatewayUrl: deps.gatewayUrlHint,
      formToken: newFormToken(),
      notice: typeof req.query.notice === 'string' ? notices[req.query.notice] : undefined,
    });
  });

  router.post('/dashboard/settings/api-tokens', guard, async (req, res) => {
    const formToken = sentFormToken(req);
    const body = parseBody(createBody, withoutFormToken(req.body));
    const user = req.user!;
    const department = (await departmentsFor(req)).find((d) => d.id === body.department_id);
    if (!department)
      throw new ApiError('validation_error', {
        status: 422,
        param: 'department_id',
        humanMessage: 'Choose a team (department) of your organisation that you manage',
      });
    const made = await formClaims.makeOnce(user.id, formToken, async () =>
      keys.create({
        kind: 'token',
        name: body.name,
        source: 'portal',
        metadata: { team: department.name, department_id: String(department.id) },
        ownerUserId: user.id,
        organisationId: user.organisationId,
        payerId: await payerForPortalKey(deps.database, user.id),
      }),
    );
    // Sent before (the answering page reloaded, a second click): the list with the token it made, not a second one.
    if ('already' in made) return res.redirect(303, '/dashboard/settings/api-tokens?notice=already_created');
    const { record, secret } = made.made;
    await announcer.announce(record.secretHash).catch(() => undefined);
    await noteActivity(deps, {
      userId: user.id,
      kind: 'key_created',
      summary: `Created API token “${record.name}” for team ${department.name}`,
      details: { token_id: record.number, department_id: department.id },
    });
    res.status(201).set('cache-control', 'no-store');
    if (wantsJson(req)) return res.json({ ...tokenView(record), token: secret });
    res.render('dashboard/settings/api-tokens', {
      title: 'API tokens',
      section: 'api-tokens',
      tokens: await withPayerWords(req, await listFor(req)),
      departments: await departmentsFor(req),
      created: { ...tokenView(record), token: secret },
      gatewayUrl: deps.gatewayUrlHint,
      formToken: newFormToken(),
      notice: undefined,
    });
  });

  router.post(
    '/dashboard/settings/api-tokens/:token_id/revoke',
    guard,
    validate({ params: z.object({ token_id: integerId }) }),
    async (req, res) => {
      const number = (req.valid!.params as { token_id: number }).token_id;
      const token = await keys.findByNumber(number);
      const user = req.user!;
      const departmentId = token ? departmentOf(token) : null;
      if (
        !token ||
        token.kind !== 'token' ||
        token.source !== 'portal' ||
        !isAllowed(user, 'tokens.manage', { organisationId: token.organisationId, departmentId })
      )
        throw new ApiError('not_found', { humanMessage: 'There is no API token with this id among your teams’ tokens' });
      if (token.status !== 'revoked') {
        const revoked = await keys.update(token.id, { status: 'revoked' });
        await announcer.announce(token.secretHash).catch(() => undefined);
        await noteActivity(deps, {
          userId: user.id,
          kind: 'key_revoked',
          summary: `Revoked API token “${token.name}”`,
          details: { token_id: token.number },
        });
        if (wantsJson(req)) return res.json(tokenView(revoked ?? token));
      } else if (wantsJson(req)) return res.json(tokenView(token));
      res.redirect(303, '/dashboard/settings/api-tokens');
    },
  );

  return router;
}
