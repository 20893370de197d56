// Sign-in with the two identity providers, the accept-terms step for new SSO users, and the
// reseller hand-off. The pending login (PKCE verifier, state, nonce) waits in the shared store
// under its state for ten minutes, and a cookie binds it to the browser that started it.
import { noteActivity } from '../../web/activity.js';
import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import { ApiError, toApiError } from '../../../../core/errors/index.js';
import type { PortalDeps } from '../../deps.js';
import { wantsJson } from '../../web/errors.js';
import { readCookie } from '../../web/layout.js';
import { parseBody, singleString, validate } from '../../web/validation.js';
import { accountStatusPage } from '../auth/service.js';
import { safeReturnTo } from '../auth/return-to.js';
import { acceptBody } from '../auth/schemas.js';
import { signIn } from '../auth/sign-in.js';
import type { User } from '../../../../core/identity/index.js';
import { tellSignInMethodChange } from './notify.js';
import type { OidcProvider, PendingSsoLogin } from './oidc.js';
import { providerLabel, ssoProviderIds, type SsoProviderId } from './providers.js';
import { resolveSsoUser } from './service.js';

/** Cookie binding a pending SSO login to the browser that started it. */
const stateCookie = 'svc_sso_state';
/** Cookie carrying "the terms were accepted" (their version) to the callback. */
export const termsCookie = 'svc_tos';
const pendingTtlMs = 10 * 60_000;

interface Pending extends PendingSsoLogin {
  returnTo: string | undefined;
  handoffOrigin: string | undefined;
}

const startQuery = z.object({ return_to: singleString(500).optional(), handoff_origin: singleString(300).optional() });
const callbackQuery = z.object({ code: singleString(2048).default(''), state: singleString(256).default('') }).loose();
const completeQuery = z.object({ token: singleString(200).default('') });

/**
 * Tells the account's holder that a provider was linked to their existing account, by email (best
 * effort: the sign-in is not failed for a mail server) and in their activity: the provider now
 * signs them in, and whoever runs it could, so a link they did not make must not go unnoticed.
 */
async function announceLink(deps: PortalDeps, user: User, label: string, now: Date): Promise<void> {
  await noteActivity(deps, { userId: user.id, kind: 'sso_linked', summary: `${label} was linked to this account`, details: {} });
  tellSignInMethodChange(deps, user, {
    subject: 'A sign-in method was added to your account',
    what: `your account can now be signed in to with ${label}: it was linked at the first sign-in with it, on ${now.toISOString().slice(0, 16).replace('T', ' ')} UTC`,
    advice:
      'If this was not you, remove it there (Settings, Sign-in methods), change your password, and tell your administrator: a password reset alone does not remove it.',
  });
}

/** GET /auth/sso-a|sso-b, the callbacks, POST /auth/accept-tos, GET /auth/sso/complete. */
export function ssoRouter(deps: PortalDeps, providers: ReadonlyMap<SsoProviderId, OidcProvider>): Router {
  const router = Router();
  const { settings } = deps;
  const ownOrigin = new URL(settings.SVC_PORTAL_BASE_URL).origin;
  const secure = ownOrigin.startsWith('https:');
  const cookieOptions = (maxAge: number) => ({ httpOnly: true, sameSite: 'lax' as const, secure, maxAge, path: '/' });
  const providerOr404 = (id: SsoProviderId) => {
    const provider = providers.get(id);
    if (!provider) throw new ApiError('not_found', { humanMessage: `Sign-in with ${id} is not configured on this portal` });
    return provider;
  };
  const failAsPage = (req: Request, res: Response, error: unknown) => {
    const e = toApiError(error);
    if (e.code === 'tos_not_accepted' && !wantsJson(req)) return res.redirect(303, '/signup?terms=required');
    if (e.code === 'account_status' && !wantsJson(req)) return res.redirect(303, String(e.details?.redirect));
    throw error;
  };

  for (const id of ssoProviderIds) {
    router.get(`/auth/${id}`, validate({ query: startQuery }), async (req, res) => {
      const provider = providerOr404(id);
      const query = req.valid!.query as z.infer<typeof startQuery>;
      let handoffOrigin: string | undefined;
      if (query.handoff_origin !== undefined) {
        handoffOrigin = URL.canParse(query.handoff_origin) ? new URL(query.handoff_origin).origin : undefined;
        if (!handoffOrigin || !settings.SVC_PORTAL_HANDOFF_ORIGINS.includes(handoffOrigin))
          throw new ApiError('validation_error', {
            status: 422,
            param: 'handoff_origin',
            details: {
              detail: [{ loc: ['query', 'handoff_origin'], msg: 'must be a configured reseller portal origin', type: 'invalid_value' }],
            },
          });
      }
      const { url, pending } = await provider.start();
      const stored: Pending = { ...pending, returnTo: safeReturnTo(query.return_to), handoffOrigin };
      await deps.store.set(`portal:sso:${pending.state}`, JSON.stringify(stored), { ttlMs: pendingTtlMs });
      res.cookie(stateCookie, pending.state, cookieOptions(pendingTtlMs));
      res.redirect(303, url.href);
    });

    router.get(`/oauth/${id}/login/callback/`, validate({ query: callbackQuery }), async (req, res) => {
      const provider = providerOr404(id);
      const { state } = req.valid!.query as z.infer<typeof callbackQuery>;
      const expired = () =>
        new ApiError('invalid_token', { humanMessage: 'This sign-in has expired or was started in another browser; please start again' });
      if (!state || readCookie(req, stateCookie) !== state) throw expired();
      const key = `portal:sso:${state}`;
      const raw = await deps.store.get(key);
      await deps.store.del(key);
      if (!raw) throw expired();
      const pending = JSON.parse(raw) as Pending;
      if (pending.provider !== id) throw expired();
      res.clearCookie(stateCookie, { path: '/' });
      try {
        const identity = await provider.complete(new URL(req.originalUrl, settings.SVC_PORTAL_BASE_URL), pending);
        const now = new Date(deps.clock());
        const { user, linked } = await resolveSsoUser(deps.users, id, identity, {
          termsAccepted: readCookie(req, termsCookie) === settings.SVC_LEGAL_VERSION,
          legalVersion: settings.SVC_LEGAL_VERSION,
          now,
          ownerEmail: settings.SVC_OWNER_EMAIL,
        });
        if (user.status !== 'active')
          throw new ApiError('account_status', { details: { status: user.status, redirect: accountStatusPage[user.status] } });
        deps.metrics.logins.inc({ method: 'oidc', result: 'success' });
        res.clearCookie(termsCookie, { path: '/' });
        if (linked) await announceLink(deps, user, providerLabel(settings, id), now);
        if (pending.handoffOrigin) {
          const token = await deps.tokens.mint('sso_handoff', user.id, now, {
            origin: pending.handoffOrigin,
            returnTo: pending.returnTo ?? null,
          });
          return res.redirect(303, `${pending.handoffOrigin}/auth/sso/complete?token=${token}`);
        }
        await signIn(req, user.id, deps.clock());
        await noteActivity(deps, {
          userId: user.id,
          kind: 'signed_in',
          summary: `Signed in with ${providerLabel(settings, id)}`,
          details: { provider: id },
        });
        res.redirect(303, pending.returnTo ?? '/dashboard');
      } catch (error) {
        deps.metrics.logins.inc({ method: 'oidc', result: 'failure' });
        failAsPage(req, res, error);
      }
    });
  }

  router.post('/auth/accept-tos', async (req, res) => {
    const body = parseBody(acceptBody, req.body);
    if (!body.accept) throw new ApiError('tos_not_accepted', { param: 'accept' });
    res.cookie(termsCookie, settings.SVC_LEGAL_VERSION, cookieOptions(pendingTtlMs));
    if (wantsJson(req)) return res.json({ accepted: true, version: settings.SVC_LEGAL_VERSION });
    res.redirect(303, body.provider ? `/auth/${body.provider}` : '/signup');
  });

  router.get('/auth/sso/complete', validate({ query: completeQuery }), async (req, res) => {
    const { token } = req.valid!.query as z.infer<typeof completeQuery>;
    const used = await deps.tokens.consume('sso_handoff', token, new Date(deps.clock()));
    // Bound to the portal it was minted for: a token replayed on another domain is refused.
    if (!used?.userId || used.payload.origin !== ownOrigin)
      throw new ApiError('invalid_token', {
        humanMessage: 'This sign-in link is not valid: it was used already, expired, or was made for another site',
      });
    const user = await deps.users.findById(used.userId);
    if (!user || user.status !== 'active') throw new ApiError('account_status');
    await signIn(req, user.id, deps.clock());
    await noteActivity(deps, { userId: user.id, kind: 'signed_in', summary: 'Signed in through a single sign-on hand-off' });
    if (wantsJson(req)) return res.json({ signed_in: true, redirect: '/dashboard' });
    res.redirect(303, safeReturnTo(typeof used.payload.returnTo === 'string' ? used.payload.returnTo : undefined) ?? '/dashboard');
  });
  return router;
}
