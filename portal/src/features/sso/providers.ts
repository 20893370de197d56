import { ssoProviderSettings, type PortalSettings } from '../../../../core/config/index.js';

/** The two identity providers' route names. */
export const ssoProviderIds = ['sso-a', 'sso-b'] as const;

/** `sso-a` or `sso-b`. */
export type SsoProviderId = (typeof ssoProviderIds)[number];

/** A provider as the sign-in pages show it. */
export interface SsoButton {
  id: SsoProviderId;
  label: string;
}

/** The providers whose issuer and client id are set, in a fixed order. */
export function configuredSsoButtons(settings: PortalSettings): SsoButton[] {
  return ssoProviderIds.flatMap((id) => {
    const p = ssoProviderSettings(settings, id === 'sso-a' ? 'a' : 'b');
    return p.issuer && p.clientId ? [{ id, label: p.label }] : [];
  });
}

/** A provider's name as people read it (its configured label), for any provider id a link row may hold. */
export function providerLabel(settings: PortalSettings, provider: string): string {
  return configuredSsoButtons(settings).find((b) => b.id === provider)?.label ?? provider;
}
