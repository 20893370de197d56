import { z } from 'zod';
import { billingSettingsShape } from '../billing/settings.js';
import { formatIssues } from './format-issues.js';
import { checkStoreSettings, ConfigError, settingsSchema } from './settings.js';

const optional = z
  .string()
  .trim()
  .transform((v) => (v === '' ? undefined : v))
  .optional();
const ms = (fallback: number) => z.coerce.number().int().min(1_000).default(fallback);

/** One OpenID Connect provider's settings (`SVC_SSO_A_*`, `SVC_SSO_B_*`); absent issuer = provider off. */
export interface SsoProviderSettings {
  issuer: string | undefined;
  clientId: string | undefined;
  clientSecret: string | undefined;
  label: string;
  /**
   * The provider's email addresses count as verified even without `email_verified: true` (an
   * organisation's own identity provider that issues its users' addresses and sends no such claim,
   * as Microsoft Entra ID does by default): `true` for any address, or only for addresses in the
   * listed domains (exact, lower-case) — a provider trusted for any domain could sign in as the
   * owner by naming the owner's address. `false`: only a provider's explicit word counts.
   */
  trustEmails: boolean | readonly string[];
}

/**
 * SVC_SSO_*_TRUST_EMAILS: `false`, `true` (any address), or a comma-separated list of domains
 * whose addresses the provider issues (`acme.com,acme.co.uk`): only those count as verified
 * without the provider's `email_verified` claim — exactly those domains, not their subdomains.
 */
const trustEmails = z
  .string()
  .trim()
  .default('false')
  .transform((value, ctx): boolean | string[] => {
    if (value === 'true' || value === 'false') return value === 'true';
    const domains = value.split(',').map((d) => d.trim().toLowerCase().replace(/^@/, ''));
    const bad = domains.find((d) => !/^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/.test(d));
    if (bad !== undefined) {
      ctx.addIssue({
        code: 'custom',
        message: `must be true, false or a comma-separated list of email domains (not ${JSON.stringify(bad)})`,
      });
      return z.NEVER;
    }
    return domains;
  });

/**
 * The portal's settings: everything every deployable reads plus the portal's own. Documented in
 * docs/portal.md; SVC_ADMIN_KEY is not used by the portal but stays required so one environment
 * runs every deployable.
 */
export const portalSettingsSchema = settingsSchema.extend({
  /**
   * Public address of the portal: links in emails, the same-origin check, the OIDC redirect URIs.
   * Unset (local runs only), the address the portal listens on (`http://host:port`).
   */
  SVC_PORTAL_BASE_URL: z
    .url({ protocol: /^https?$/ })
    .transform((v) => v.replace(/\/+$/, ''))
    .optional(),
  /** Outgoing mail server (`smtp://host:port`); unset, messages go to SVC_DATA_DIR/outbox/. */
  /** Where API callers reach the gateway, shown in the portal's code samples. */
  SVC_GATEWAY_PUBLIC_URL: z
    .url({ protocol: /^https?$/ })
    .transform((v) => v.replace(/\/+$/, ''))
    .default('https://gateway.example.com'),
  SVC_SMTP_URL: optional.pipe(z.url({ protocol: /^smtps?$/ }).optional()),
  SVC_MAIL_FROM: z.string().trim().min(3).default('svc portal <no-reply@localhost>'),
  /** The account with this address becomes `owner` once its email is verified. */
  SVC_OWNER_EMAIL: optional,
  /** A session ends after this long without a request… */
  SVC_PORTAL_SESSION_IDLE_MS: ms(2 * 60 * 60_000),
  /** …and this long after sign-in whatever happens. */
  SVC_PORTAL_SESSION_ABSOLUTE_MS: ms(7 * 24 * 60 * 60_000),
  /**
   * Which peers may say who the client is (X-Forwarded-For), for the per-address throttles: the
   * ingress in front of the portal. Express's trust-proxy list (addresses, CIDRs, `loopback`,
   * `linklocal`, `uniquelocal`) or `none`. Every peer trusted this way can name any client address,
   * so narrow it to the ingress's addresses where other clients share its network.
   */
  SVC_PORTAL_TRUST_PROXY: z.string().trim().min(1).default('loopback, linklocal, uniquelocal'),
  /** Failed sign-ins allowed per account, and per client address, in one throttle window. */
  SVC_LOGIN_MAX_FAILURES_PER_ACCOUNT: z.coerce.number().int().min(1).default(5),
  SVC_LOGIN_MAX_FAILURES_PER_ADDRESS: z.coerce.number().int().min(1).default(30),
  SVC_LOGIN_WINDOW_MS: ms(15 * 60_000),
  /** The most credit (USD) an organisation admin may give one user; platform admins are not bounded. */
  SVC_ORG_ADMIN_MAX_CREDIT_USD: z.coerce.number().min(0).max(1_000_000).default(100),
  /** The most credit (USD) an organisation admin may bring all of their organisation's users to together. */
  SVC_ORG_ADMIN_MAX_ORG_CREDIT_USD: z.coerce.number().min(0).max(10_000_000).default(1_000),
  /**
   * Emails a signed-out request may have sent (password reset, verification link), per recipient
   * and kind, and per client address, in one SVC_LOGIN_WINDOW_MS window.
   */
  SVC_AUTH_EMAILS_PER_RECIPIENT: z.coerce.number().int().min(1).default(3),
  SVC_AUTH_EMAILS_PER_CLIENT: z.coerce.number().int().min(1).default(20),
  /** Version of the terms and policies a user accepts; raising it asks everyone again. */
  SVC_LEGAL_VERSION: z.string().trim().min(1).default('2026-01'),
  /**
   * Reseller portal origins (comma-separated `https://host[:port]`) an SSO sign-in may be handed
   * off to with a one-time token; empty, no hand-off is made.
   */
  SVC_PORTAL_HANDOFF_ORIGINS: z
    .string()
    .default('')
    .transform((v) =>
      v
        .split(',')
        .map((o) => o.trim())
        .filter(Boolean),
    )
    .pipe(z.array(z.url({ protocol: /^https?$/ }).transform((o) => new URL(o).origin))),
  SVC_SSO_A_ISSUER: optional,
  SVC_SSO_A_CLIENT_ID: optional,
  SVC_SSO_A_CLIENT_SECRET: optional,
  SVC_SSO_A_LABEL: z.string().trim().min(1).default('Company SSO'),
  SVC_SSO_A_TRUST_EMAILS: trustEmails,
  SVC_SSO_B_ISSUER: optional,
  SVC_SSO_B_CLIENT_ID: optional,
  SVC_SSO_B_CLIENT_SECRET: optional,
  SVC_SSO_B_LABEL: z.string().trim().min(1).default('Partner SSO'),
  SVC_SSO_B_TRUST_EMAILS: trustEmails,
  /**
   * Whether this portal process also works background jobs (exports, schedules, alerts;
   * docs/reports.md "Jobs"); false when they run in their own Deployment (`npm run worker`).
   */
  SVC_PORTAL_WORKER: z
    .enum(['true', 'false'], { message: 'must be true or false' })
    .default('true')
    .transform((v) => v === 'true'),
  // Card payments, automatic top-up and the processor webhook (docs/billing.md "Settings").
  ...billingSettingsShape,
});

/** Parsed portal settings. */
export type PortalSettings = z.infer<typeof portalSettingsSchema>;

/** Portal settings once the public address is known (set, or taken from the listening address). */
export type ResolvedPortalSettings = PortalSettings & { SVC_PORTAL_BASE_URL: string };

/** Parses the portal's environment once; a bad or missing setting throws a ConfigError naming it. */
export function parsePortalSettings(env: Record<string, string | undefined>): PortalSettings {
  const result = portalSettingsSchema.safeParse(env);
  if (!result.success) throw new ConfigError(`invalid portal settings:\n${formatIssues(result.error.issues)}`);
  checkStoreSettings(result.data, 'portal settings');
  return result.data;
}

/** The settings of provider `a` or `b`. */
export function ssoProviderSettings(settings: PortalSettings, which: 'a' | 'b'): SsoProviderSettings {
  return which === 'a'
    ? {
        issuer: settings.SVC_SSO_A_ISSUER,
        clientId: settings.SVC_SSO_A_CLIENT_ID,
        clientSecret: settings.SVC_SSO_A_CLIENT_SECRET,
        label: settings.SVC_SSO_A_LABEL,
        trustEmails: settings.SVC_SSO_A_TRUST_EMAILS,
      }
    : {
        issuer: settings.SVC_SSO_B_ISSUER,
        clientId: settings.SVC_SSO_B_CLIENT_ID,
        clientSecret: settings.SVC_SSO_B_CLIENT_SECRET,
        label: settings.SVC_SSO_B_LABEL,
        trustEmails: settings.SVC_SSO_B_TRUST_EMAILS,
      };
}
