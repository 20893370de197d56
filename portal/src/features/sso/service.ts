// Who an SSO sign-in is: the user linked to the provider's subject; else the account with the
// same email, linked only when the provider vouches for the email; else a new account, only
// when the provider vouches for the email and once its person has accepted the terms.
import { ApiError } from '../../../../core/errors/index.js';
import type { User, UserRepository } from '../../../../core/identity/index.js';
import type { SsoIdentity } from './oidc.js';
import type { SsoProviderId } from './providers.js';

/** Finds, links or creates the user of an SSO identity. `termsAccepted`: the accept-terms cookie's version matched. */
export async function resolveSsoUser(
  users: UserRepository,
  provider: SsoProviderId,
  identity: SsoIdentity,
  options: { termsAccepted: boolean; legalVersion: string; now: Date; ownerEmail: string | undefined },
): Promise<{ user: User; created: boolean; linked: boolean }> {
  const linked = await users.findByIdentity(provider, identity.subject);
  if (linked) return { user: linked, created: false, linked: false };
  if (!identity.email)
    throw new ApiError('invalid_token', { humanMessage: 'The identity provider did not share an email address, which an account needs' });
  const existing = await users.findByEmail(identity.email);
  if (existing) {
    // Linking on an unverified claim would let anyone who controls a provider take over the account.
    if (!identity.emailVerified)
      throw new ApiError('email_taken', {
        humanMessage: 'An account with this email exists; sign in with your password (the identity provider has not verified this address)',
      });
    // A suspended or archived account gains no new way in: the caller refuses it as it stands.
    if (existing.status !== 'active') return { user: existing, created: false, linked: false };
    // Its holder removed this provider (Settings, Sign-in methods): it does not link itself again.
    if ((await users.refusedProviders(existing.id)).includes(provider))
      throw new ApiError('email_taken', {
        humanMessage:
          'The holder of this account removed this identity provider as a way to sign in; sign in with your password or another provider (the account’s settings can allow it again)',
      });
    // Its address never verified, the account may be someone else's claim on it: the provider's
    // word settles whose it is (its password and sessions end).
    if (!existing.emailVerified) await users.claimUnverifiedForProvider(existing.id, options.now, displayNameOf(identity, identity.email));
    await users.linkIdentity(existing.id, provider, identity.subject, options.now);
    // Verified now by the provider's word: the owner address becomes owner then, as by an emailed
    // link (an account verified before keeps the role it has).
    if (!existing.emailVerified)
      return {
        user: await users.markEmailVerified(existing.id, options.now, ownerEmailFor(identity, options.ownerEmail)),
        created: false,
        linked: false,
      };
    // A verified account in use gained a way in: `linked`, so its holder is told.
    return { user: (await users.findById(existing.id)) ?? existing, created: false, linked: true };
  }
  // A new account takes the address only on the provider's word that it is the person's: else
  // anyone could hold another's address before its owner signs up.
  if (!identity.emailVerified)
    throw new ApiError('email_not_verified', {
      humanMessage: `Your identity provider has not verified ${identity.email}; verify it there, or sign up with a password (we email you a link)`,
    });
  if (!options.termsAccepted)
    throw new ApiError('tos_not_accepted', { humanMessage: 'Accept the terms of service to finish creating your account' });
  const user = await users.create(
    {
      email: identity.email,
      displayName: displayNameOf(identity, identity.email),
      passwordHash: null,
      legalVersion: options.legalVersion,
      emailVerified: true,
    },
    options.now,
  );
  await users.linkIdentity(user.id, provider, identity.subject, options.now);
  return {
    user: await users.markEmailVerified(user.id, options.now, ownerEmailFor(identity, options.ownerEmail)),
    created: true,
    linked: false,
  };
}

/**
 * The owner address (SVC_OWNER_EMAIL) to promote on this sign-in: only when the provider itself
 * says the address is verified. A provider trusted for a domain (SVC_SSO_*_TRUST_EMAILS) vouches
 * for its people, not for who owns the platform; the owner's address then proves itself by the
 * emailed link.
 */
function ownerEmailFor(identity: SsoIdentity, ownerEmail: string | undefined): string | undefined {
  return identity.emailClaimVerified ? ownerEmail : undefined;
}

/** The name an account made or claimed by SSO shows: the provider's name claim, else the address's local part. */
function displayNameOf(identity: SsoIdentity, email: string): string {
  return identity.name || email.split('@')[0]!;
}
