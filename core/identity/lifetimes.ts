// How long one-time tokens live (documented in docs/portal.md). Sessions' lifetimes are settings.

/** Kinds of one-time token, each with its own lifetime. */
export const tokenPurposes = ['verify_email', 'reset_password', 'sso_handoff', 'invite'] as const;

/** A kind of one-time token. */
export type TokenPurpose = (typeof tokenPurposes)[number];

/** Lifetime of each token kind, in milliseconds. */
export const tokenLifetimeMs: Record<TokenPurpose, number> = {
  verify_email: 24 * 60 * 60_000,
  reset_password: 30 * 60_000,
  // Minted after a successful SSO for another portal domain; used at once by the browser.
  sso_handoff: 45_000,
  invite: 7 * 24 * 60 * 60_000,
};
