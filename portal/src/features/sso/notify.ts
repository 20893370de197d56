// The email an account's holder gets when the ways into it change (a provider linked at its first
// sign-in, removed or allowed again on the settings page): one message, pointing to where the
// holder reviews them. Best effort, after the answer: the change is made, and a mail server that fails is logged.
import type { User } from '../../../../core/identity/index.js';
import type { PortalDeps } from '../../deps.js';
import { actionMessage } from '../../mail/mailer.js';

export function tellSignInMethodChange(
  deps: Pick<PortalDeps, 'mailer' | 'settings'>,
  user: Pick<User, 'id' | 'email' | 'displayName'>,
  change: { subject: string; what: string; advice: string },
): void {
  deps.mailer.sendLater(
    actionMessage(
      user.email,
      change.subject,
      `Hello ${user.displayName}, ${change.what}.`,
      'Review your sign-in methods',
      `${deps.settings.SVC_PORTAL_BASE_URL}/dashboard/settings#sign-in-methods`,
      change.advice,
    ),
    `the email "${change.subject}"`,
  );
}
