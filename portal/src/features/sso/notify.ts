// The email an account's holder gets when the ways into it change (a provider linked at its first
// sign-in, removed or allowed again on the settings page): one message, pointing to where the
// holder reviews them. Best effort: the change is made, and a mail server that fails is logged.
import type { User } from '../../../../core/identity/index.js';
import type { PortalDeps } from '../../deps.js';
import { actionMessage } from '../../mail/mailer.js';

export async function tellSignInMethodChange(
  deps: Pick<PortalDeps, 'mailer' | 'settings' | 'logger'>,
  user: Pick<User, 'id' | 'email' | 'displayName'>,
  change: { subject: string; what: string; advice: string },
): Promise<void> {
  try {
    await deps.mailer.send(
      actionMessage(
        user.email,
        change.subject,
        `Hello ${user.displayName}, ${change.what}.`,
        'Review your sign-in methods',
        `${deps.settings.SVC_PORTAL_BASE_URL}/dashboard/settings#sign-in-methods`,
        change.advice,
      ),
    );
  } catch (error) {
    deps.logger.warn({ err: error, user_id: user.id }, `the email "${change.subject}" could not be sent`);
  }
}
