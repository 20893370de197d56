// The account actions: JSON bodies and HTML forms both. A JSON caller gets JSON (errors in the
// catalogue shape); a form gets a redirect, or the same form again with the problem explained.
import type { PortalDeps } from '../../deps.js';
import { noteActivity } from '../../web/activity.js';
import { Router, type NextFunction, type Request, type Response } from 'express';
import { ApiError, toApiError } from '../../../../core/errors/index.js';
import { passwordRule, tokenLifetimeMs, type User, type UserRepository } from '../../../../core/identity/index.js';
import type { PortalMetrics } from '../../../../core/telemetry/index.js';
import { wantsJson } from '../../web/errors.js';
import { isLanguage, languageCookie, languageCookieOptions } from '../../web/layout.js';
import { endSession } from '../../web/principal.js';
import { sameOriginVerdict } from '../../web/same-origin.js';
import { sessionCookie } from '../../web/session.js';
import { parseBody, singleString, validate, validationError } from '../../web/validation.js';
import { z } from 'zod';
import { configuredSsoButtons } from '../sso/providers.js';
import { verifyHours } from './pages.js';
import { safeReturnTo } from './return-to.js';
import { emailBody, languageBody, loginBody, registerBody, resendVerificationBody, resetBody } from './schemas.js';
import type { EmailRequestThrottle } from './throttle.js';
import type { AccountService } from './service.js';
import { signIn } from './sign-in.js';

/** The public summary of a user in JSON answers. */
export function userJson(user: User): Record<string, unknown> {
  return {
    id: user.id,
    email: user.email,
    name: user.displayName,
    role: user.role,
    status: user.status,
    email_verified: user.emailVerified,
    language: user.language,
  };
}

type Page = { view: string; locals: Record<string, unknown> };

/**
 * Runs an action; a refusal goes to the error handler for JSON callers and re-renders `page` for
 * forms (with the status and the human message). Unexpected failures always go to the handler.
 */
function action(page: (req: Request) => Page, run: (req: Request, res: Response) => Promise<void>) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    try {
      await run(req, res);
    } catch (error) {
      if (!(error instanceof ApiError) || wantsJson(req) || error.status >= 500) return next(error);
      const { view, locals } = page(req);
      if (error.retryAfterSeconds) res.set('retry-after', String(error.retryAfterSeconds));
      res.status(error.status).render(view, {
        ...locals,
        error: error.humanMessage,
        values: { email: (req.body as { email?: unknown })?.email, name: (req.body as { name?: unknown })?.name },
      });
    }
  };
}

/** A link's page asked for without its token by a JSON caller: 422 naming `token`. */
const missingToken = (humanMessage: string) =>
  validationError([{ loc: ['query', 'token'], msg: 'is required', type: 'missing' }], { humanMessage });

/** The router of /auth/*, /verify-email, /reset-password, /logout and /set-language. */
export function accountRouter(deps: {
  accounts: AccountService;
  emailThrottle: EmailRequestThrottle;
  users: UserRepository;
  settings: { SVC_LEGAL_VERSION: string; SVC_PORTAL_BASE_URL: string };
  ssoSettings: Parameters<typeof configuredSsoButtons>[0];
  clock: () => number;
  metrics: PortalMetrics;
  activity: PortalDeps['activity'];
  logger: PortalDeps['logger'];
}): Router {
  const router = Router();
  const { accounts } = deps;
  /**
   * Emails a signed-out request asks for are made and sent after the answer: the answer is the same
   * whether or not the address has an account, and so is its timing (building and sending the
   * email took 12–26 ms that an unknown address did not). A failure is logged, not answered.
   */
  const inBackground = (what: string, task: Promise<void>) =>
    void task.catch((error: unknown) => deps.logger.error({ err: error }, `${what} could not be sent`));
  const sso = configuredSsoButtons(deps.ssoSettings);
  const signupPage = (req: Request): Page => ({
    view: 'auth/signup',
    locals: {
      title: 'Create your account',
      sso,
      passwordRule,
      legalVersion: deps.settings.SVC_LEGAL_VERSION,
      returnTo: safeReturnTo((req.body as { return_to?: string })?.return_to),
    },
  });
  const loginPage = (req: Request): Page => ({
    view: 'auth/login',
    locals: { title: 'Sign in', sso, returnTo: safeReturnTo((req.body as { return_to?: string })?.return_to) },
  });

  router.post(
    '/auth/register',
    action(signupPage, async (req, res) => {
      const body = parseBody(registerBody, req.body);
      // A sign-up mails its address a link: bounded like the other mail a signed-out client asks for.
      await deps.emailThrottle.take('verify_email', body.email, req.ip ?? 'unknown');
      // A form's unchecked box sends nothing, so for forms absent means "not accepted".
      const acceptTerms = body.accept_terms ?? (req.is('application/json') ? undefined : false);
      // Where the sign-up began (an invitation): after verifying, the sign-in goes back there.
      const returnTo = safeReturnTo(body.return_to);
      const user = await accounts.register({ email: body.email, password: body.password, name: body.name, acceptTerms, returnTo });
      if (wantsJson(req)) res.status(201).json({ user: userJson(user), verification: 'sent' });
      else res.redirect(303, `/login?notice=check_email${returnTo ? `&return_to=${encodeURIComponent(returnTo)}` : ''}`);
    }),
  );

  router.post('/auth/login', async (req, res, next) => {
    try {
      const body = parseBody(loginBody, req.body);
      const user = await accounts.signIn({ email: body.email, password: body.password, address: req.ip ?? 'unknown' });
      await signIn(req, user.id, deps.clock());
      deps.metrics.logins.inc({ method: 'password', result: 'success' });
      await noteActivity(deps, { userId: user.id, kind: 'signed_in', summary: 'Signed in with email and password' });
      const destination = safeReturnTo(body.return_to) ?? '/dashboard';
      if (wantsJson(req)) res.json({ user: userJson(user), redirect: destination });
      else res.redirect(303, destination);
    } catch (error) {
      const apiError = toApiError(error);
      deps.metrics.logins.inc({ method: 'password', result: 'failure' });
      // A browser whose account is suspended or archived is shown the page that explains it.
      if (apiError.code === 'account_status' && !wantsJson(req))
        return res.redirect(303, String(apiError.details?.redirect ?? '/account/suspended'));
      if (!(error instanceof ApiError) || wantsJson(req) || apiError.status >= 500) return next(error);
      const { view, locals } = loginPage(req);
      res
        .status(apiError.status)
        .set(apiError.retryAfterSeconds ? { 'retry-after': String(apiError.retryAfterSeconds) } : {})
        .render(view, {
          ...locals,
          error: apiError.humanMessage,
          // Said only after the right password: the page offers the link again, one click away.
          unverified: apiError.code === 'email_not_verified',
          values: { email: (req.body as { email?: unknown })?.email },
        });
    }
  });

  const sameAnswer = 'If an account exists for this address, we have sent it an email. Check your inbox (and spam folder).';
  router.post(
    '/auth/forgot-password',
    action(
      () => ({
        view: 'auth/forgot-password',
        locals: { title: 'Reset your password', resetMinutes: tokenLifetimeMs.reset_password / 60_000 },
      }),
      async (req, res) => {
        const { email } = parseBody(emailBody, req.body);
        await deps.emailThrottle.take('reset_password', email, req.ip ?? 'unknown');
        inBackground('password reset email', accounts.forgotPassword(email));
        if (wantsJson(req)) res.status(202).json({ status: 'accepted', message: sameAnswer });
        else
          res.render('auth/forgot-password', {
            title: 'Reset your password',
            resetMinutes: tokenLifetimeMs.reset_password / 60_000,
            notice: sameAnswer,
          });
      },
    ),
  );

  router.post(
    '/auth/resend-verification',
    action(
      (req) => ({
        view: 'auth/verify-email',
        locals: {
          title: 'Verify your email',
          verified: false,
          verifyHours,
          returnTo: safeReturnTo((req.body as { return_to?: string })?.return_to),
        },
      }),
      async (req, res) => {
        const body = parseBody(resendVerificationBody, req.body);
        const returnTo = safeReturnTo(body.return_to);
        await deps.emailThrottle.take('verify_email', body.email, req.ip ?? 'unknown');
        inBackground('verification email', accounts.resendVerification(body.email, returnTo));
        if (wantsJson(req)) res.status(202).json({ status: 'accepted', message: sameAnswer });
        else res.render('auth/verify-email', { title: 'Verify your email', verified: false, verifyHours, returnTo, notice: sameAnswer });
      },
    ),
  );

  router.post(
    '/auth/reset-password',
    action(
      (req) => ({
        view: 'auth/reset-password',
        locals: {
          title: 'Choose a new password',
          token: String((req.body as { token?: unknown })?.token ?? ''),
          passwordRule,
          resetMinutes: tokenLifetimeMs.reset_password / 60_000,
        },
      }),
      async (req, res) => {
        const body = parseBody(resetBody, req.body);
        // Checked before the token is spent: a typo in one field leaves the link usable.
        if (body.confirm_password !== undefined && body.confirm_password !== body.password)
          throw validationError([{ loc: ['body', 'confirm_password'], msg: 'does not match the new password', type: 'mismatch' }], {
            humanMessage: 'The two passwords differ: type the same new password in both fields',
          });
        const user = await accounts.resetPassword(body.token, body.password);
        if (wantsJson(req)) res.json({ user: userJson(user), redirect: '/login' });
        else res.redirect(303, '/login?notice=reset');
      },
    ),
  );

  // `return_to` came with the link (sendVerification): the page's sign-in leads back there.
  const verifyQuery = z.object({ token: singleString(200).optional(), return_to: singleString(500).optional() });
  router.get('/verify-email', validate({ query: verifyQuery }), async (req, res, next) => {
    const { token, return_to } = req.valid!.query as z.infer<typeof verifyQuery>;
    const returnTo = safeReturnTo(return_to);
    if (!token) {
      if (wantsJson(req)) return next(missingToken('Open the link from the verification email: it carries the token'));
      return res.render('auth/verify-email', { title: 'Verify your email', verified: false, verifyHours, returnTo });
    }
    try {
      const user = await accounts.verifyEmail(token);
      if (wantsJson(req)) return res.json({ user: userJson(user), verified: true });
      res.render('auth/verify-email', { title: 'Email verified', verified: true, verifyHours, returnTo });
    } catch (error) {
      if (!(error instanceof ApiError) || wantsJson(req)) return next(error);
      res
        .status(error.status)
        .render('auth/verify-email', { title: 'Verify your email', verified: false, verifyHours, returnTo, error: error.humanMessage });
    }
  });

  // The reset link's page: the form only while the link works. Checked without using it (the
  // form's POST uses it); a dead link answers as /verify-email's does: 401 invalid_token, and a
  // page offering a new link (JSON callers: the error).
  const resetQuery = z.object({ token: singleString(200).optional() });
  router.get('/reset-password', validate({ query: resetQuery }), async (req, res, next) => {
    const { token } = req.valid!.query as z.infer<typeof resetQuery>;
    const page = { title: 'Choose a new password', passwordRule, resetMinutes: tokenLifetimeMs.reset_password / 60_000 };
    if (!token) {
      if (wantsJson(req)) return next(missingToken('Open the link from the password-reset email: it carries the token'));
      return res.render('auth/reset-password', { ...page, token: '' });
    }
    try {
      await accounts.resetLinkUser(token);
      if (wantsJson(req)) return res.json({ valid: true });
      res.render('auth/reset-password', { ...page, token });
    } catch (error) {
      if (!(error instanceof ApiError) || wantsJson(req)) return next(error);
      res.status(error.status).render('auth/reset-password', { ...page, token: '', error: error.humanMessage });
    }
  });

  const portalOrigin = new URL(deps.settings.SVC_PORTAL_BASE_URL).origin;
  const signOut = async (req: Request, res: Response) => {
    await endSession(req);
    res.clearCookie(sessionCookie, { path: '/' });
    if (wantsJson(req)) res.json({ signed_out: true });
    else res.redirect(303, '/login?notice=signed_out');
  };
  // GET, as the portal's links use it; but a link or image on another site must not sign anyone
  // out: a request that says it came from elsewhere is asked to confirm (a POST, which the
  // same-origin check guards) instead.
  router.get('/logout', async (req, res) => {
    const fromElsewhere =
      sameOriginVerdict({ origin: req.get('origin'), referer: req.get('referer'), fetchSite: req.get('sec-fetch-site') }, portalOrigin) ===
      false;
    if (!fromElsewhere) return signOut(req, res);
    if (wantsJson(req))
      throw new ApiError('csrf_rejected', { humanMessage: 'Sign-out was asked for by another site; send POST /logout from the portal' });
    res.status(200).render('auth/logout', { title: 'Sign out?' });
  });
  router.post('/logout', signOut);

  router.post('/set-language', async (req, res) => {
    const body = parseBody(languageBody, req.body);
    if (!isLanguage(body.language))
      throw new ApiError('validation_error', {
        status: 422,
        param: 'language',
        humanMessage: 'Unknown language',
        details: { detail: [{ loc: ['body', 'language'], msg: 'must be one of en, de, fr, es', type: 'invalid_value' }] },
      });
    res.cookie(languageCookie, body.language, languageCookieOptions);
    if (req.user) {
      await deps.users.setLanguage(req.user.id, body.language, new Date(deps.clock()));
      await noteActivity(deps, { userId: req.user.id, kind: 'language_changed', summary: `Language set to ${body.language}` });
    }
    if (wantsJson(req)) res.json({ language: body.language, saved_to_profile: Boolean(req.user) });
    else res.redirect(303, safeReturnTo(body.return_to) ?? '/');
  });
  return router;
}
