// The sign-in family's GET pages: forms that work without JavaScript and post to /auth/*.
import { Router } from 'express';
import { z } from 'zod';
import { passwordRule } from '../../../../core/identity/password-rule.js';
import { tokenLifetimeMs } from '../../../../core/identity/lifetimes.js';
import type { PortalDeps } from '../../deps.js';
import { validate, singleString } from '../../web/validation.js';
import { configuredSsoButtons } from '../sso/providers.js';
import { safeReturnTo } from './return-to.js';

const loginQuery = z.object({
  return_to: singleString(500).optional(),
  notice: z.enum(['verified', 'reset', 'signed_out', 'check_email']).optional(),
});

const notices = {
  verified: 'Your email address is verified. Sign in to continue.',
  reset: 'Your password was changed. Sign in with the new one.',
  signed_out: 'You are signed out.',
  check_email: 'Check your inbox: we sent you a link to verify your email address.',
} as const;

/** GET /login, /signup, /forgot-password (/verify-email and /reset-password check their link: routes.ts). */
export function authPagesRouter(deps: PortalDeps): Router {
  const router = Router();
  const sso = configuredSsoButtons(deps.settings);
  const legalVersion = deps.settings.SVC_LEGAL_VERSION;
  router.get('/login', validate({ query: loginQuery }), (req, res) => {
    const query = req.valid!.query as z.infer<typeof loginQuery>;
    res.render('auth/login', {
      title: 'Sign in',
      values: {},
      sso,
      returnTo: safeReturnTo(query.return_to),
      notice: query.notice ? notices[query.notice] : undefined,
    });
  });
  // `email` and `return_to` come from an invitation's page: the invited address filled in, and
  // the invitation again after the first sign-in.
  const signupQuery = z.object({
    terms: z.enum(['required']).optional(),
    email: singleString(320).optional(),
    return_to: singleString(500).optional(),
  });
  router.get('/signup', validate({ query: signupQuery }), (req, res) => {
    // Sent here by an SSO callback for a new user who has not accepted the terms yet.
    const query = req.valid!.query as z.infer<typeof signupQuery>;
    const termsRequired = query.terms === 'required';
    res.render('auth/signup', {
      title: 'Create your account',
      values: { email: query.email },
      returnTo: safeReturnTo(query.return_to),
      sso,
      passwordRule,
      legalVersion,
      error: termsRequired ? 'Accept the terms of service below to finish signing up with single sign-on.' : undefined,
    });
  });
  router.get('/forgot-password', (_req, res) =>
    res.render('auth/forgot-password', { title: 'Reset your password', resetMinutes: tokenLifetimeMs.reset_password / 60_000 }),
  );
  return router;
}

/** Shared with the actions: what the verify page needs to render. */
export const verifyHours = tokenLifetimeMs.verify_email / 3_600_000;
