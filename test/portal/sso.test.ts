// Sign-in with both identity providers against a real OpenID Provider library on loopback:
// PKCE, state and nonce, the accept-terms step for new SSO users, linking by verified email,
// sso_only at password sign-in, unconfigured providers, and the single-use reseller hand-off.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PortalClient } from '../support/portal-client.js';
import { startOidcProvider, type TestAccount, type TestOidcProvider } from '../support/oidc-provider.js';
import { startPortalHarness, type PortalHarness } from '../support/portal-harness.js';
import { waitFor } from '../support/wait-for.js';
import { resolveSsoUser } from '../../portal/src/features/sso/service.js';
import { hashPassword } from '../../core/identity/index.js';

let harness: PortalHarness;
/** The platform owner's address (SVC_OWNER_EMAIL), which becomes owner when a provider vouches for it. */
const ownerEmail = `Platform.Owner-${Date.now()}@example.com`;
const providers: Record<'sso-a' | 'sso-b', TestOidcProvider | undefined> = { 'sso-a': undefined, 'sso-b': undefined };
beforeAll(async () => {
  harness = await startPortalHarness({
    settingsFor: async (baseUrl) => {
      providers['sso-a'] = await startOidcProvider({ redirectUri: `${baseUrl}/oauth/sso-a/login/callback/` });
      providers['sso-b'] = await startOidcProvider({ redirectUri: `${baseUrl}/oauth/sso-b/login/callback/`, clientId: 'portal-b' });
      const a = providers['sso-a'];
      const b = providers['sso-b'];
      return {
        SVC_SSO_A_ISSUER: a.issuer,
        SVC_SSO_A_CLIENT_ID: a.clientId,
        SVC_SSO_A_CLIENT_SECRET: a.clientSecret,
        SVC_SSO_A_LABEL: 'Acme Login',
        SVC_SSO_B_ISSUER: b.issuer,
        SVC_SSO_B_CLIENT_ID: b.clientId,
        SVC_SSO_B_CLIENT_SECRET: b.clientSecret,
        SVC_SSO_B_LABEL: 'Partner ID',
        // An organisation's own provider whose addresses are its to issue (it sends no email_verified).
        SVC_SSO_B_TRUST_EMAILS: 'example.com, Partner.example',
        SVC_PORTAL_HANDOFF_ORIGINS: baseUrl,
        SVC_OWNER_EMAIL: ownerEmail,
      };
    },
  });
});
afterAll(async () => {
  await harness?.close();
  await providers['sso-a']?.close();
  await providers['sso-b']?.close();
});

/** Follows the provider's redirects (with its own cookies) until it sends the browser back to the portal. */
async function throughProvider(start: string): Promise<string> {
  const jar = new Map<string, string>();
  let url = start;
  for (let hop = 0; hop < 10; hop++) {
    if (url.startsWith(harness.url)) return url;
    const response = await fetch(url, { redirect: 'manual', headers: { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') } });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      jar.set(pair!.slice(0, eq), pair!.slice(eq + 1));
    }
    const location = response.headers.get('location');
    if (!location) throw new Error(`provider stopped at ${url} with ${response.status}: ${await response.text()}`);
    url = new URL(location, url).href;
  }
  throw new Error('too many redirects at the provider');
}

/** Runs a whole SSO sign-in for `client`; returns the portal's answer to the callback. */
async function ssoSignIn(client: PortalClient, provider: 'sso-a' | 'sso-b', account: TestAccount, startQuery = ''): Promise<Response> {
  providers[provider]!.signInAs(account);
  const start = await client.get(`/auth/${provider}${startQuery}`);
  expect(start.status).toBe(303);
  const authorize = new URL(start.headers.get('location')!);
  expect(authorize.searchParams.get('code_challenge_method')).toBe('S256');
  expect(authorize.searchParams.get('state')).toBeTruthy();
  expect(authorize.searchParams.get('nonce')).toBeTruthy();
  const back = new URL(await throughProvider(authorize.href));
  return client.get(back.pathname + back.search);
}

const account = (name: string, emailVerified = true): TestAccount => ({
  sub: `sub-${name}-${Date.now()}`,
  email: `${name}-${Date.now()}@example.com`,
  emailVerified,
  name: `SSO ${name}`,
});

describe('SSO sign-in', () => {
  it.each(['sso-a', 'sso-b'] as const)('%s: a new user is sent to accept the terms, then signed in after accepting', async (provider) => {
    const person = account(provider);
    const client = new PortalClient(harness.url);
    const refused = await ssoSignIn(client, provider, person);
    expect(refused.status).toBe(303);
    expect(refused.headers.get('location')).toBe('/signup?terms=required');
    expect(await harness.portal.deps.users.findByEmail(person.email)).toBeUndefined();

    const accepted = await client.postForm('/auth/accept-tos', { accept: 'true', provider });
    expect(accepted.headers.get('location')).toBe(`/auth/${provider}`);
    const done = await ssoSignIn(client, provider, person);
    expect(done.status).toBe(303);
    expect(done.headers.get('location')).toBe('/dashboard');
    expect(await (await client.get('/dashboard')).text()).toContain(`Welcome, SSO ${provider}`);
    const user = await harness.portal.deps.users.findByEmail(person.email);
    expect(user).toMatchObject({ hasPassword: false, emailVerified: true });

    // Password sign-in to this SSO-only account is refused with sso_only.
    const password = await new PortalClient(harness.url).postJson('/auth/login', { email: person.email, password: 'whatever password 1' });
    expect(await password.json()).toMatchObject({ code: 'sso_only' });
  });

  it('SVC_OWNER_EMAIL becomes owner when a provider vouches for it, as when its emailed link is followed', async () => {
    const client = new PortalClient(harness.url);
    await client.postForm('/auth/accept-tos', { accept: 'true', provider: 'sso-a' });
    const person = { sub: `platform-owner-${Date.now()}`, email: ownerEmail.toLowerCase(), emailVerified: true, name: 'Platform Owner' };
    expect((await ssoSignIn(client, 'sso-a', person)).headers.get('location')).toBe('/dashboard');
    expect(await harness.portal.deps.users.findByEmail(ownerEmail)).toMatchObject({ role: 'owner', emailVerified: true });
    // Anyone else signing up by SSO is a member.
    const other = new PortalClient(harness.url);
    await other.postForm('/auth/accept-tos', { accept: 'true', provider: 'sso-a' });
    const someone = account('not-owner');
    await ssoSignIn(other, 'sso-a', someone);
    expect((await harness.portal.deps.users.findByEmail(someone.email))?.role).not.toBe('owner');
  });

  it('a provider trusted for the domain without saying email_verified itself does not make the owner', async () => {
    const email = `trusted-owner-${Date.now()}@example.com`;
    const identity = { subject: `t-${Date.now()}`, email, emailVerified: true, emailClaimVerified: false, name: 'Trusted' };
    const options = { termsAccepted: true, legalVersion: '1', now: new Date(), ownerEmail: email };
    const { user } = await resolveSsoUser(harness.portal.deps.users, 'sso-b', identity, options);
    expect(user).toMatchObject({ emailVerified: true, role: 'member' });
    // The provider's own claim does.
    const claimed = { ...identity, subject: `c-${Date.now()}`, email: `claimed-owner-${Date.now()}@example.com`, emailClaimVerified: true };
    expect((await resolveSsoUser(harness.portal.deps.users, 'sso-a', claimed, { ...options, ownerEmail: claimed.email })).user.role).toBe(
      'owner',
    );
  });

  it("a provider's name claim is cleaned of direction controls before it becomes the display name", async () => {
    const person = { ...account('sso-a'), name: 'Emoji \u202Enimda\u2066' };
    const client = new PortalClient(harness.url);
    await client.postForm('/auth/accept-tos', { accept: 'true', provider: 'sso-a' });
    expect((await ssoSignIn(client, 'sso-a', person)).headers.get('location')).toBe('/dashboard');
    expect((await harness.portal.deps.users.findByEmail(person.email))?.displayName).toBe('Emoji nimda');
  });

  it('answers tos_not_accepted to a JSON caller and accepts {accept: true} as JSON', async () => {
    const client = new PortalClient(harness.url);
    const json = await client.postJson('/auth/accept-tos', { accept: true });
    expect(await json.json()).toEqual({ accepted: true, version: harness.portal.deps.settings.SVC_LEGAL_VERSION });
    expect(client.cookies.get('svc_tos')).toBe(harness.portal.deps.settings.SVC_LEGAL_VERSION);
    const refused = await new PortalClient(harness.url).postJson('/auth/accept-tos', { accept: false });
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ code: 'tos_not_accepted' });
  });

  it('links an existing account only when the provider says the email is verified', async () => {
    const email = `linked-${Date.now()}@example.com`;
    await harness.portal.deps.users.create(
      { email, displayName: 'Existing', passwordHash: null, legalVersion: '1', emailVerified: true },
      new Date(),
    );
    const unverified = await ssoSignIn(new PortalClient(harness.url), 'sso-a', {
      sub: `u-${Date.now()}`,
      email,
      emailVerified: false,
      name: 'X',
    });
    expect(unverified.status).toBe(409);
    const client = new PortalClient(harness.url);
    const subject = `v-${Date.now()}`;
    const verified = await ssoSignIn(client, 'sso-b', { sub: subject, email, emailVerified: true, name: 'X' });
    expect(verified.headers.get('location')).toBe('/dashboard');
    expect(await (await client.get('/dashboard')).text()).toContain('Welcome, Existing');
    // The account's holder is told a provider now signs them in, by email and in their activity.
    await harness.mailSettled();
    expect(harness.mail.some((line) => line.includes(`email to ${email} ("A sign-in method was added to your account")`))).toBe(true);
    expect(harness.lastLink(email, '/dashboard/settings')).toBe(`${harness.url}/dashboard/settings#sign-in-methods`);
    const activity = (await (await client.get('/dashboard/activity', { accept: 'application/json' })).json()) as {
      data: { kind: string }[];
    };
    expect(activity.data.map((a) => a.kind)).toContain('sso_linked');
    // Signing in again through the same link announces nothing more.
    const announced = () => harness.mail.filter((line) => line.includes(`email to ${email} ("A sign-in method`)).length;
    expect(announced()).toBe(1);
    expect((await ssoSignIn(new PortalClient(harness.url), 'sso-b', { sub: subject, email, emailVerified: true, name: 'X' })).status).toBe(
      303,
    );
    await harness.mailSettled();
    expect(announced()).toBe(1);
  });

  it('the holder removes a provider from their sign-in methods; it does not link itself again until allowed', async () => {
    const email = `remover-${Date.now()}@example.com`;
    await harness.portal.deps.users.create(
      { email, displayName: 'Remover', passwordHash: await hashPassword('remover password 42'), legalVersion: '1', emailVerified: true },
      new Date(),
    );
    const person = { sub: `r-${Date.now()}`, email, emailVerified: true, name: 'Remover' };
    const holder = new PortalClient(harness.url);
    expect((await ssoSignIn(holder, 'sso-a', person)).headers.get('location')).toBe('/dashboard');
    const json = { accept: 'application/json' };
    const settings = (await (await holder.get('/dashboard/settings', json)).json()) as {
      sign_in_methods: { provider: string; label: string }[];
    };
    expect(settings.sign_in_methods).toMatchObject([{ provider: 'sso-a', label: 'Acme Login' }]);
    const page = await (await holder.get('/dashboard/settings')).text();
    expect(page).toContain('data-testid="sign-in-methods"');
    expect(page).toContain('Acme Login');

    // Someone else signed in to the account through that provider: removing it signs them out.
    const intruder = new PortalClient(harness.url);
    expect((await ssoSignIn(intruder, 'sso-a', person)).headers.get('location')).toBe('/dashboard');
    const removed = await holder.postForm('/dashboard/settings/sign-in-methods/sso-a/remove', {});
    expect(removed.headers.get('location')).toBe('/dashboard/settings?notice=unlinked#sign-in-methods');
    expect((await intruder.get('/dashboard/settings', json)).status).toBe(401);
    expect((await holder.get('/dashboard/settings', json)).status).toBe(200);
    await harness.mailSettled();
    expect(harness.mail.some((line) => line.includes(`email to ${email} ("Your sign-in methods changed")`))).toBe(true);
    // The provider vouching for the address again does not link itself back.
    const again = await ssoSignIn(new PortalClient(harness.url), 'sso-a', person);
    expect(again.status).toBe(409);
    expect(await again.text()).toContain('removed this identity provider');
    // Until the holder allows it again.
    expect((await holder.postForm('/dashboard/settings/sign-in-methods/sso-a/allow', {})).status).toBe(303);
    expect((await ssoSignIn(new PortalClient(harness.url), 'sso-a', person)).headers.get('location')).toBe('/dashboard');
    // A provider the account does not have, or no provider id at all: 404.
    expect((await holder.postJson('/dashboard/settings/sign-in-methods/sso-b/remove', {})).status).toBe(404);
    for (const odd of ['sso-a%00', 'SSO-A', '%E2%80%AEa'])
      expect((await holder.postJson(`/dashboard/settings/sign-in-methods/${odd}/allow`, {})).status, odd).toBe(404);
  });

  it('an account without a password keeps its only provider: removing it is refused', async () => {
    const person = account('only-way-in');
    const client = new PortalClient(harness.url);
    await client.postForm('/auth/accept-tos', { accept: 'true', provider: 'sso-a' });
    expect((await ssoSignIn(client, 'sso-a', person)).headers.get('location')).toBe('/dashboard');
    const refused = await client.postJson('/dashboard/settings/sign-in-methods/sso-a/remove', {});
    expect(refused.status).toBe(409);
    expect(((await refused.json()) as { human_message: string }).human_message).toContain('only way into your account');
  });

  it('a provider trusted for its addresses (SVC_SSO_B_TRUST_EMAILS) makes accounts without the claim', async () => {
    const person = account('trusted', false);
    const client = new PortalClient(harness.url);
    await client.postJson('/auth/accept-tos', { accept: true });
    expect((await ssoSignIn(client, 'sso-b', person)).headers.get('location')).toBe('/dashboard');
    expect(await harness.portal.deps.users.findByEmail(person.email)).toMatchObject({ emailVerified: true });
  });

  it("a provider trusted for its domains is not trusted for an address outside them (the owner's, say)", async () => {
    const outsider = { ...account('outsider', false), email: `owner-${Date.now()}@elsewhere.test` };
    const client = new PortalClient(harness.url);
    await client.postJson('/auth/accept-tos', { accept: true });
    const refused = await ssoSignIn(client, 'sso-b', outsider);
    expect(refused.status).toBe(403);
    expect(await harness.portal.deps.users.findByEmail(outsider.email)).toBeUndefined();
    // A listed domain, in any case, still is.
    const listed = { ...account('listed', false), email: `someone-${Date.now()}@PARTNER.example` };
    expect((await ssoSignIn(client, 'sso-b', listed)).headers.get('location')).toBe('/dashboard');
  });

  it('makes no account on an address the provider has not verified', async () => {
    const person = account('unverified', false);
    const client = new PortalClient(harness.url);
    await client.postJson('/auth/accept-tos', { accept: true });
    const refused = await ssoSignIn(client, 'sso-a', person);
    expect(refused.status).toBe(403);
    expect(await harness.portal.deps.users.findByEmail(person.email)).toBeUndefined();
  });

  it('a verified sign-in to an account whose address was never verified ends the password someone else may have set', async () => {
    // Someone registers the address first with a password of their own and never verifies it.
    const email = `claimed-${Date.now()}@example.com`;
    const squatter = new PortalClient(harness.url);
    expect((await squatter.postJson('/auth/register', { email, password: 'squatter pass 77', name: 'Squatter' })).status).toBe(201);
    const squattersLink = new URL(await harness.emailedLink(email, '/verify-email?token='));
    // The address's owner signs in with a provider that vouches for it: the account is theirs.
    const owner = new PortalClient(harness.url);
    const signedIn = await ssoSignIn(owner, 'sso-a', { sub: `owner-${Date.now()}`, email, emailVerified: true, name: 'Owner' });
    expect(signedIn.headers.get('location')).toBe('/dashboard');
    // The squatter's chosen name goes with the password: the account shows the provider's name.
    expect(await harness.portal.deps.users.findByEmail(email)).toMatchObject({
      hasPassword: false,
      emailVerified: true,
      displayName: 'Owner',
    });
    // The squatter's password and emailed link no longer work.
    const login = await squatter.postJson('/auth/login', { email, password: 'squatter pass 77' });
    expect(await login.json()).toMatchObject({ code: 'sso_only' });
    const link = await new PortalClient(harness.url).get(squattersLink.pathname + squattersLink.search, { accept: 'application/json' });
    expect(link.status).toBe(401);
    expect((await owner.get('/dashboard')).status).toBe(200);
  });

  it('a provider link made while the address was unverified ends when the owner proves the address', async () => {
    // As before links required a verified address: someone's provider holds the owner's address.
    for (const how of ['reset', 'sso'] as const) {
      const email = `held-${how}-${Date.now()}@example.com`;
      const held = await harness.portal.deps.users.create(
        { email, displayName: 'Held', passwordHash: null, legalVersion: '1', emailVerified: false },
        new Date(),
      );
      const attacker = `attacker-${how}-${Date.now()}`;
      await harness.portal.deps.users.linkIdentity(held.id, 'sso-a', attacker, new Date());
      if (how === 'reset') {
        const anonymous = new PortalClient(harness.url);
        expect((await anonymous.postJson('/auth/forgot-password', { email })).status).toBe(202);
        await waitFor('the reset email', () => harness.lastLink(email, '/reset-password?token=') !== undefined);
        const token = new URL(await harness.emailedLink(email, '/reset-password?token=')).searchParams.get('token')!;
        expect((await anonymous.postJson('/auth/reset-password', { token, password: 'the owner chose this 42' })).status).toBe(200);
      } else {
        const owner = await ssoSignIn(new PortalClient(harness.url), 'sso-b', {
          sub: `owner-${Date.now()}`,
          email,
          emailVerified: true,
          name: 'O',
        });
        expect(owner.headers.get('location')).toBe('/dashboard');
      }
      expect(await harness.portal.deps.users.findByIdentity('sso-a', attacker), how).toBeUndefined();
      const again = await ssoSignIn(new PortalClient(harness.url), 'sso-a', { sub: attacker, email, emailVerified: false, name: 'A' });
      expect(again.status, how).toBe(409);
    }
  });

  it('links no provider to a suspended account', async () => {
    const email = `suspended-${Date.now()}@example.com`;
    const user = await harness.portal.deps.users.create(
      { email, displayName: 'Suspended', passwordHash: null, legalVersion: '1', emailVerified: true },
      new Date(),
    );
    await harness.portal.deps.users.setStatus(user.id, 'suspended', new Date());
    const sub = `s-${Date.now()}`;
    const refused = await ssoSignIn(new PortalClient(harness.url), 'sso-b', { sub, email, emailVerified: true, name: 'S' });
    expect(refused.status).toBe(303);
    expect(refused.headers.get('location')).toContain('suspended');
    expect(await harness.portal.deps.users.findByIdentity('sso-b', sub)).toBeUndefined();
  });

  it('refuses a callback whose state was not started in this browser', async () => {
    const client = new PortalClient(harness.url);
    providers['sso-a']!.signInAs(account('csrf'));
    const start = await client.get('/auth/sso-a');
    const back = new URL(await throughProvider(start.headers.get('location')!));
    const stranger = await new PortalClient(harness.url).get(back.pathname + back.search, { accept: 'application/json' });
    expect(stranger.status).toBe(401);
    expect(await stranger.json()).toMatchObject({ code: 'invalid_token' });
  });

  it('says a sign-in was cancelled at the provider, rather than that its answer did not verify', async () => {
    const client = new PortalClient(harness.url);
    const start = await client.get('/auth/sso-a');
    const state = new URL(start.headers.get('location')!).searchParams.get('state')!;
    // The provider sends the browser back with an error (and, per RFC 9207, its issuer), as when the person cancels there.
    const error = new URLSearchParams({ error: 'access_denied', state, iss: providers['sso-a']!.issuer });
    const back = await client.get(`/oauth/sso-a/login/callback/?${error}`);
    expect(back.status).toBe(401);
    const page = await back.text();
    expect(page).toContain('The sign-in was cancelled at the identity provider');
    expect(page).not.toContain('could not be verified');
  });

  it('hands a sign-in off to a reseller origin with a one-time token that works once', async () => {
    const person = account('handoff');
    const client = new PortalClient(harness.url);
    await client.postJson('/auth/accept-tos', { accept: true });
    const answer = await ssoSignIn(client, 'sso-a', person, `?handoff_origin=${encodeURIComponent(harness.url)}`);
    const target = new URL(answer.headers.get('location')!);
    expect(target.origin + target.pathname).toBe(`${harness.url}/auth/sso/complete`);
    const reseller = new PortalClient(harness.url);
    const first = await reseller.get(target.pathname + target.search);
    expect(first.status).toBe(303);
    expect((await reseller.get('/dashboard')).status).toBe(200);
    const second = await new PortalClient(harness.url).get(target.pathname + target.search, { accept: 'application/json' });
    expect(second.status).toBe(401);
    expect(await second.json()).toMatchObject({ code: 'invalid_token' });
    const notAllowed = await client.get(`/auth/sso-a?handoff_origin=${encodeURIComponent('https://evil.example')}`, {
      accept: 'application/json',
    });
    expect(notAllowed.status).toBe(422);
  });
});

describe('an unconfigured provider', () => {
  it('answers a clear 404, not a 500', async () => {
    const bare = await startPortalHarness();
    try {
      const response = await fetch(`${bare.url}/auth/sso-b`, { headers: { accept: 'application/json' }, redirect: 'manual' });
      expect(response.status).toBe(404);
      expect(await response.json()).toMatchObject({
        code: 'not_found',
        human_message: 'Sign-in with sso-b is not configured on this portal',
      });
    } finally {
      await bare.close();
    }
  });
});
