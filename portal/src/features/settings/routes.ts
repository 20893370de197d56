// The account's settings (docs/portal.md "Settings"):
//   GET  /dashboard/settings               profile (name, email, language) and display settings
//   POST /dashboard/settings               {display_name?, language?}: saves what is given
//   POST /dashboard/settings/display-name  a JSON object of free properties (display settings),
//                                          bounded in size and depth, stored as given
//   POST /dashboard/settings/password      {current_password, new_password, confirm_password?}:
//                                          other sessions end, the address is told
//   POST /dashboard/settings/sign-in-methods/{provider}/remove
//                                          unlinks an identity provider (never the only way in)
//                                          and refuses it linking itself again by the address
//   POST /dashboard/settings/sign-in-methods/{provider}/allow
//                                          lifts that refusal
import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import { ApiError } from '../../../../core/errors/index.js';
import { passwordRule } from '../../../../core/identity/index.js';
import type { PortalDeps } from '../../deps.js';
import { noteActivity } from '../../web/activity.js';
import { wantsJson } from '../../web/errors.js';
import { isLanguage, languageCookie, languages } from '../../web/layout.js';
import { requireAction } from '../../web/principal.js';
import { parseBody, validationError } from '../../web/validation.js';
import { withFormPage } from '../../web/form-issues.js';
import { displaySettingsProblem } from './display-settings.js';
import { changePasswordBody } from '../auth/schemas.js';
import { providerLabel } from '../sso/providers.js';
import { tellSignInMethodChange } from '../sso/notify.js';
import type { AccountService } from '../auth/service.js';

const saveBody = z.strictObject({
  display_name: z.string().trim().min(1, 'must not be empty').max(120, 'must be at most 120 characters').optional(),
  language: z.string().optional(),
});

const notices: Record<string, string> = {
  saved: 'Settings saved.',
  password: 'Password changed. Every other session of your account was signed out.',
  unlinked: 'Sign-in method removed: that identity provider no longer signs you in, nor links itself again by your address.',
  allowed: 'That identity provider may sign you in again: its next sign-in with your address links it.',
};

export function settingsRouter(deps: PortalDeps, accounts: AccountService): Router {
  const router = Router();
  const guard = requireAction('profile.update');
  const now = () => new Date(deps.clock());

  const labelOf = (provider: string) => providerLabel(deps.settings, provider);
  const view = async (userId: number) => {
    const user = (await deps.users.findById(userId))!;
    return {
      // The identity providers that sign this account in (linked at a first sign-in with them).
      sign_in_methods: (await deps.users.identitiesOf(userId)).map((i) => ({
        provider: i.provider,
        label: labelOf(i.provider),
        linked_at: i.linkedAt,
      })),
      // Providers removed here, which no longer link themselves by the address.
      refused_sign_in_methods: (await deps.users.refusedProviders(userId)).map((provider) => ({
        provider,
        label: labelOf(provider),
      })),
      email: user.email,
      display_name: user.displayName,
      has_password: user.hasPassword,
      language: user.language,
      role: user.role,
      display_settings: await deps.users.displaySettings(userId),
    };
  };

  router.get('/dashboard/settings', guard, async (req, res) => {
    const settings = await view(req.user!.id);
    if (wantsJson(req)) return res.json(settings);
    const notice = typeof req.query.notice === 'string' ? notices[req.query.notice] : undefined;
    res.render('dashboard/settings/index', { title: 'Settings', section: 'settings', settings, languages, notice, passwordRule });
  });

  router.post('/dashboard/settings', guard, (req, res) =>
    withFormPage(
      req,
      res,
      () => save(req, res),
      async (status, form) => {
        // The page again with what was typed and each problem beside the form.
        const settings = { ...(await view(req.user!.id)), ...pickTyped(form.values) };
        res.status(status).render('dashboard/settings/index', {
          title: 'Settings',
          section: 'settings',
          settings,
          languages,
          issues: form.issues,
          passwordRule,
        });
      },
    ),
  );

  const save = async (req: Request, res: Response) => {
    const body = parseBody(saveBody, req.body);
    const user = req.user!;
    if (body.language !== undefined && !isLanguage(body.language))
      throw validationError([
        { loc: ['body', 'language'], msg: `must be one of ${languages.map((l) => l.code).join(', ')}`, type: 'invalid_value' },
      ]);
    if (body.display_name !== undefined && body.display_name !== user.displayName) {
      await deps.users.setDisplayName(user.id, body.display_name, now());
      await noteActivity(deps, { userId: user.id, kind: 'profile_changed', summary: `Display name changed to “${body.display_name}”` });
    }
    if (body.language !== undefined && body.language !== user.language) {
      await deps.users.setLanguage(user.id, body.language, now());
      res.cookie(languageCookie, body.language, { httpOnly: false, sameSite: 'lax', maxAge: 365 * 24 * 3_600_000, path: '/' });
      await noteActivity(deps, { userId: user.id, kind: 'language_changed', summary: `Language set to ${body.language}` });
    }
    if (wantsJson(req)) return void res.json(await view(user.id));
    res.redirect(303, '/dashboard/settings?notice=saved');
  };

  router.post('/dashboard/settings/password', guard, (req, res) =>
    withFormPage(
      req,
      res,
      () => changePassword(req, res),
      // The page again with each problem; what was typed in password fields is never sent back.
      async (status, form) => {
        res.status(status).render('dashboard/settings/index', {
          title: 'Settings',
          section: 'settings',
          settings: await view(req.user!.id),
          languages,
          passwordRule,
          passwordIssues: form.issues,
        });
      },
    ),
  );

  const changePassword = async (req: Request, res: Response) => {
    const body = parseBody(changePasswordBody, req.body);
    if (body.confirm_password !== undefined && body.confirm_password !== body.new_password)
      throw validationError([{ loc: ['body', 'confirm_password'], msg: 'does not match the new password', type: 'mismatch' }]);
    const user = req.user!;
    await accounts.changePassword({
      userId: user.id,
      current: body.current_password,
      next: body.new_password,
      keptSession: req.sessionID,
      address: req.ip ?? 'unknown',
    });
    await noteActivity(deps, { userId: user.id, kind: 'password_changed', summary: 'Password changed; other sessions signed out' });
    if (wantsJson(req)) return void res.json({ ok: true });
    res.redirect(303, '/dashboard/settings?notice=password');
  };

  /** The provider named in the path: an id as providers have (`sso-a`), else no such sign-in method. */
  const providerParam = (req: Request): string => {
    const provider = req.params.provider as string;
    if (!/^[a-z0-9_-]{1,32}$/.test(provider)) throw new ApiError('not_found', { humanMessage: 'Your account has no such sign-in method' });
    return provider;
  };

  router.post('/dashboard/settings/sign-in-methods/:provider/remove', guard, async (req, res) => {
    const user = req.user!;
    const provider = providerParam(req);
    const outcome = await deps.users.unlinkIdentity(user.id, provider);
    if (outcome === 'absent') throw new ApiError('not_found', { humanMessage: 'Your account has no such sign-in method' });
    if (outcome === 'last')
      throw new ApiError('conflict', {
        humanMessage:
          'This is the only way into your account: set a password first (ask for a reset link on the sign-in page), then remove it',
      });
    await noteActivity(deps, {
      userId: user.id,
      kind: 'sso_unlinked',
      summary: `${labelOf(provider)} no longer signs in to this account`,
    });
    // Whoever signed in through that provider is signed out: the account's other sessions end, as at a password change.
    await deps.sessions.destroyOthersForUser(user.id, req.sessionID);
    tellSignInMethodChange(deps, user, {
      subject: 'Your sign-in methods changed',
      what: `${labelOf(provider)} was removed from your sign-in methods`,
      advice:
        'Every other session of your account was signed out. If you did not remove it, change your password and tell your administrator.',
    });
    if (wantsJson(req)) return res.json(await view(user.id));
    res.redirect(303, '/dashboard/settings?notice=unlinked#sign-in-methods');
  });

  router.post('/dashboard/settings/sign-in-methods/:provider/allow', guard, async (req, res) => {
    const user = req.user!;
    const provider = providerParam(req);
    if (!(await deps.users.allowProvider(user.id, provider)))
      throw new ApiError('not_found', { humanMessage: 'That sign-in method was not refused for your account' });
    await noteActivity(deps, {
      userId: user.id,
      kind: 'sso_allowed',
      summary: `${labelOf(provider)} may sign in to this account again`,
    });
    tellSignInMethodChange(deps, user, {
      subject: 'Your sign-in methods changed',
      what: `${labelOf(provider)} may sign in to your account again`,
      advice:
        'It links itself at its next sign-in with your address. If you did not allow it, remove it again, change your password and tell your administrator.',
    });
    if (wantsJson(req)) return res.json(await view(user.id));
    res.redirect(303, '/dashboard/settings?notice=allowed#sign-in-methods');
  });

  router.post('/dashboard/settings/display-name', guard, async (req, res) => {
    // The object replaces what is stored: only a JSON body says what it is. An empty POST or a
    // form (which the body parsers read as `{}` or strings) would wipe the settings.
    if (!req.is('application/json'))
      throw new ApiError('unsupported_media_type', {
        humanMessage: 'Send the display settings as a JSON object with Content-Type: application/json',
      });
    const problem = displaySettingsProblem(req.body);
    if (problem) throw new ApiError('validation_error', { status: 422, humanMessage: `The display settings ${problem}`, param: 'body' });
    await deps.users.setDisplaySettings(req.user!.id, req.body as Record<string, unknown>, now());
    res.json({ ok: true, display_settings: await deps.users.displaySettings(req.user!.id) });
  });

  return router;
}

/** What the form sent of the fields it shows, as text to put back in them. */
function pickTyped(values: Record<string, unknown>): { display_name?: string; language?: string } {
  const text = (value: unknown) => (typeof value === 'string' ? value : undefined);
  return {
    ...(text(values.display_name) !== undefined && { display_name: text(values.display_name) }),
    ...(text(values.language) !== undefined && { language: text(values.language) }),
  };
}
