// The two OpenID Connect relying parties (openid-client's function API): discovery once per
// provider (retried after a failure), authorization code with PKCE, state and nonce, ID token
// validated by the library. An http:// issuer is accepted only on a loopback address.
import * as oidc from 'openid-client';
import { plainName } from '../../../../core/text/well-formed.js';
import { ApiError, networkCodes } from '../../../../core/errors/index.js';
import { ConfigError, ssoProviderSettings, type ResolvedPortalSettings } from '../../../../core/config/index.js';
import type { SsoProviderId } from './providers.js';

/** What the callback learns about the person who signed in. */
export interface SsoIdentity {
  subject: string;
  email: string | undefined;
  /** The address counts as verified: by the provider's `email_verified` claim, or by trusting it for the address (SVC_SSO_*_TRUST_EMAILS). */
  emailVerified: boolean;
  /** The provider said so itself (`email_verified: true`), not only trusted for the domain: what making the owner takes. */
  emailClaimVerified: boolean;
  name: string | undefined;
}

/** What must survive the round trip to the provider (kept server-side, keyed by state). */
export interface PendingSsoLogin {
  provider: SsoProviderId;
  codeVerifier: string;
  state: string;
  nonce: string;
}

const loopbackHosts = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

/** Whether an issuer address may be used: https anywhere, http only on loopback. */
export function issuerAllowed(issuer: URL): boolean {
  return issuer.protocol === 'https:' || (issuer.protocol === 'http:' && loopbackHosts.has(issuer.hostname));
}

/** One configured provider: builds authorization URLs and completes callbacks. */
export class OidcProvider {
  private configuration: Promise<oidc.Configuration> | undefined;
  /** Where the browser is sent to sign in (for the CSP's form-action). */
  readonly issuerOrigin: string;

  constructor(
    readonly id: SsoProviderId,
    private readonly issuer: URL,
    private readonly clientId: string,
    private readonly clientSecret: string | undefined,
    readonly redirectUri: string,
    /** SVC_SSO_*_TRUST_EMAILS: this provider's addresses (all, or those of the listed domains) count as verified without the claim. */
    private readonly trustEmails: boolean | readonly string[] = false,
  ) {
    this.issuerOrigin = issuer.origin;
  }

  private config(): Promise<oidc.Configuration> {
    if (!this.configuration) {
      const insecure = this.issuer.protocol === 'http:';
      this.configuration = oidc.discovery(
        this.issuer,
        this.clientId,
        this.clientSecret,
        undefined,
        insecure ? { execute: [oidc.allowInsecureRequests] } : undefined,
      );
      // A failed discovery (provider down) is retried by the next sign-in, not remembered.
      this.configuration.catch(() => (this.configuration = undefined));
    }
    return this.configuration.catch((cause: unknown) => {
      throw new ApiError('provider_unavailable', {
        humanMessage: 'The identity provider cannot be reached right now; try again shortly',
        cause,
      });
    });
  }

  /** The provider's authorization URL and what the callback needs to check it. */
  async start(): Promise<{ url: URL; pending: PendingSsoLogin }> {
    const config = await this.config();
    const codeVerifier = oidc.randomPKCECodeVerifier();
    const pending: PendingSsoLogin = { provider: this.id, codeVerifier, state: oidc.randomState(), nonce: oidc.randomNonce() };
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: this.redirectUri,
      scope: 'openid email profile',
      code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
      state: pending.state,
      nonce: pending.nonce,
    });
    return { url, pending };
  }

  /** Whether the provider is trusted for this address without its `email_verified` claim. */
  private trusts(email: unknown): boolean {
    if (typeof this.trustEmails === 'boolean') return this.trustEmails;
    if (typeof email !== 'string') return false;
    const domain = email.slice(email.lastIndexOf('@') + 1).toLowerCase();
    return email.includes('@') && this.trustEmails.includes(domain);
  }

  /** Exchanges the callback's code (PKCE, state, nonce and the ID token all checked). */
  async complete(callbackUrl: URL, pending: PendingSsoLogin): Promise<SsoIdentity> {
    const config = await this.config();
    let claims: Record<string, unknown> & { sub: string };
    try {
      const tokens = await oidc.authorizationCodeGrant(config, callbackUrl, {
        pkceCodeVerifier: pending.codeVerifier,
        expectedState: pending.state,
        expectedNonce: pending.nonce,
        idTokenExpected: true,
      });
      const idToken = tokens.claims();
      if (!idToken) throw new Error('no ID token');
      claims = { ...idToken };
      // Many providers put email and name only in the userinfo answer, not in the ID token.
      if (claims.email === undefined)
        claims = { ...(await oidc.fetchUserInfo(config, tokens.access_token, idToken.sub)), ...claims, sub: idToken.sub };
    } catch (cause) {
      throw callbackFailure(cause);
    }
    const claimVerified = claims.email_verified === true || claims.email_verified === 'true';
    return {
      subject: claims.sub,
      email: typeof claims.email === 'string' ? claims.email : undefined,
      // Some providers send the claim as a string ("true": Amazon Cognito).
      emailVerified: claimVerified || this.trusts(claims.email),
      emailClaimVerified: claimVerified,
      // Shown to other people as the display name (at most 120 characters, as the settings form takes).
      name: typeof claims.name === 'string' ? plainName(claims.name, 120) : undefined,
    };
  }
}

/**
 * The provider was not reached: fetch failed on the network (or its connection timed out). Not
 * any TypeError: the OAuth library raises those for a malformed token too, which is the answer's
 * fault, and retrying would not help.
 */
function unreached(cause: unknown): boolean {
  if (!(cause instanceof TypeError) || cause.message !== 'fetch failed') return false;
  const code = (cause.cause as { code?: unknown } | undefined)?.code;
  return typeof code !== 'string' || networkCodes.has(code) || code.startsWith('UND_ERR_');
}

/**
 * What a failed callback tells the person, by its cause: they cancelled (or the provider refused)
 * at the provider, the provider could not be reached or failed, or its answer did not verify.
 */
export function callbackFailure(cause: unknown): ApiError {
  if (cause instanceof oidc.AuthorizationResponseError) {
    const cancelled = cause.error === 'access_denied' || cause.error === 'consent_required' || cause.error === 'login_required';
    return new ApiError('invalid_token', {
      humanMessage: cancelled
        ? 'The sign-in was cancelled at the identity provider; sign in again to continue'
        : `The identity provider refused the sign-in (${plainName(cause.error, 64) ?? 'no reason given'}); sign in again, or ask your administrator`,
      cause,
    });
  }
  // The token or userinfo call did not reach the provider, or the provider failed (5xx).
  const status =
    cause instanceof oidc.ResponseBodyError
      ? cause.status
      : cause instanceof oidc.ClientError
        ? (cause.cause as { status?: unknown } | undefined)?.status
        : undefined;
  if (unreached(cause) || (typeof status === 'number' && status >= 500))
    return new ApiError('provider_unavailable', {
      humanMessage: 'The identity provider cannot be reached right now; try again shortly',
      cause,
    });
  return new ApiError('invalid_token', {
    humanMessage: 'The identity provider’s answer could not be verified; please sign in again',
    cause,
  });
}

/** The configured providers by id; a provider with a non-loopback http issuer is a configuration error. */
export function createOidcProviders(settings: ResolvedPortalSettings): Map<SsoProviderId, OidcProvider> {
  const providers = new Map<SsoProviderId, OidcProvider>();
  for (const [id, which] of [
    ['sso-a', 'a'],
    ['sso-b', 'b'],
  ] as const) {
    const p = ssoProviderSettings(settings, which);
    if (!p.issuer || !p.clientId) continue;
    const issuer = new URL(p.issuer);
    if (!issuerAllowed(issuer))
      throw new ConfigError(`SVC_SSO_${which.toUpperCase()}_ISSUER: an http:// issuer is allowed only on a loopback address`);
    providers.set(
      id,
      new OidcProvider(
        id,
        issuer,
        p.clientId,
        p.clientSecret,
        `${settings.SVC_PORTAL_BASE_URL}/oauth/${id}/login/callback/`,
        p.trustEmails,
      ),
    );
  }
  return providers;
}
