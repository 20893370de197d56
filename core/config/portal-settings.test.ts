import { expect, test } from 'vitest';
import { ConfigError } from './settings.js';
import { parsePortalSettings } from './portal-settings.js';

/** The settings every portal needs, so a test names only what it is about. */
const base = { SVC_ADMIN_KEY: 'a'.repeat(32), SVC_KEY_PEPPER: 'p'.repeat(32), SVC_CATALOG: 'catalogue.yaml' };
const parse = (env: Record<string, string>) => parsePortalSettings({ ...base, ...env });

test('SVC_SSO_*_TRUST_EMAILS is false, true, or a list of email domains', () => {
  expect(parse({}).SVC_SSO_A_TRUST_EMAILS).toBe(false);
  expect(parse({ SVC_SSO_A_TRUST_EMAILS: 'true' }).SVC_SSO_A_TRUST_EMAILS).toBe(true);
  expect(parse({ SVC_SSO_B_TRUST_EMAILS: ' Acme.com, @acme.co.uk ' }).SVC_SSO_B_TRUST_EMAILS).toEqual(['acme.com', 'acme.co.uk']);
  for (const bad of ['yes', 'acme', 'acme.com,,x.org', '*.acme.com'])
    expect(() => parse({ SVC_SSO_B_TRUST_EMAILS: bad }), bad).toThrow(ConfigError);
});
