// Accounts over HTTP: registration, verification, sign-in, sessions, reset, each auth error code
// from its trigger, the same-origin check, throttling across two replicas, and clean logs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PortalClient } from '../support/portal-client.js';
import { startPortalHarness, type PortalHarness } from '../support/portal-harness.js';
import { waitFor } from '../support/wait-for.js';

let harness: PortalHarness;
beforeAll(async () => {
  harness = await startPortalHarness({
    settings: { SVC_OWNER_EMAIL: 'Owner@Example.com', SVC_LOGIN_MAX_FAILURES_PER_ACCOUNT: '3', SVC_AUTH_EMAILS_PER_CLIENT: '80' },
  });
});
afterAll(async () => {
  await harness?.close();
});

const password = 'correct horse 7 battery';
let counter = 0;
const uniqueEmail = () => `user${++counter}-${Date.now()}@example.com`;

/** Registers, verifies through the emailed link, and returns a signed-in client. */
async function signedInUser(email = uniqueEmail()): Promise<PortalClient> {
  const client = new PortalClient(harness.url);
  expect((await client.postJson('/auth/register', { email, password, name: 'Test User' })).status).toBe(201);
  const link = await harness.emailedLink(email, '/verify-email?token=');
  expect((await client.get(new URL(link).pathname + new URL(link).search, { accept: 'application/json' })).status).toBe(200);
  expect((await client.postJson('/auth/login', { email, password })).status).toBe(200);
  return client;
}

describe('registration', () => {
  it('creates an account, emails a verification link, and refuses sign-in until it is used', async () => {
    const email = uniqueEmail();
    const client = new PortalClient(harness.url);
    const created = await client.postJson('/auth/register', { email, password, name: 'Ana' });
    expect(created.status).toBe(201);
    expect(await created.json()).toMatchObject({
      user: { email, name: 'Ana', role: 'member', email_verified: false },
      verification: 'sent',
    });
    const early = await client.postJson('/auth/login', { email, password });
    expect(early.status).toBe(403);
    expect(await early.json()).toMatchObject({ code: 'email_not_verified' });
    // A browser is offered the link again, one click away.
    const earlyPage = await client.postForm('/auth/login', { email, password }, { accept: 'text/html' });
    expect(earlyPage.status).toBe(403);
    expect(await earlyPage.text()).toMatch(/data-testid="resend-verification"[\s\S]*name="email" value="[^"]+"/);

    const link = new URL(await harness.emailedLink(email, '/verify-email?token='));
    const page = await client.get(link.pathname + link.search);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('Your email address is verified');
    // Opened again: the page says what may have happened and offers both ways on — sign in or a
    // new link — without saying anything of the account behind the link.
    const again = await client.get(link.pathname + link.search, { accept: 'text/html' });
    expect(again.status).toBe(401);
    const againPage = await again.text();
    expect(againPage).toContain('If your address is verified, sign in');
    expect(againPage).toContain('<a class="button" href="/login">Sign in</a>');
    expect(againPage).toContain('action="/auth/resend-verification"');
    expect((await client.postJson('/auth/login', { email, password })).status).toBe(200);
  });

  it.each([
    [{ password: 'short1' }, 400, 'weak_password'],
    [{ accept_terms: false }, 403, 'tos_not_accepted'],
  ])('refuses %j with %i %s', async (change, status, code) => {
    const client = new PortalClient(harness.url);
    const response = await client.postJson('/auth/register', { email: uniqueEmail(), password, name: 'X', ...change });
    expect(response.status).toBe(status);
    expect(await response.json()).toMatchObject({
      code,
      error: { code },
      human_message: expect.any(String),
      message: expect.stringContaining(code),
    });
  });

  it('refuses a password over 256 characters, however long, with 400 weak_password saying the rule', async () => {
    for (const length of [257, 100_000]) {
      const response = await new PortalClient(harness.url).postJson('/auth/register', {
        email: uniqueEmail(),
        password: `a1${'b'.repeat(length - 2)}`,
        name: 'X',
        accept_terms: true,
      });
      expect(response.status, String(length)).toBe(400);
      expect(await response.json()).toMatchObject({
        code: 'weak_password',
        human_message: expect.stringContaining('at most 256 characters'),
      });
    }
  });

  it('refuses an address already registered in another case with email_taken', async () => {
    const email = uniqueEmail();
    const client = new PortalClient(harness.url);
    expect((await client.postJson('/auth/register', { email, password, name: 'A' })).status).toBe(201);
    const response = await client.postJson('/auth/register', { email: email.toUpperCase(), password, name: 'B' });
    expect(response.status).toBe(409);
    expect(await response.json()).toMatchObject({ code: 'email_taken' });
  });

  it('answers missing and malformed fields with 422 naming each', async () => {
    const response = await new PortalClient(harness.url).postJson('/auth/register', { email: 'not-an-email' });
    expect(response.status).toBe(422);
    const body = (await response.json()) as { code: string; detail: { loc: string[] }[] };
    expect(body.code).toBe('validation_error');
    expect(body.detail.map((d) => d.loc.join('.')).sort()).toEqual(['body.email', 'body.name', 'body.password']);
  });

  it('refuses an address over RFC 5321 lengths (64 before the @, 254 in all) with 422 naming email, and opens no account', async () => {
    const client = new PortalClient(harness.url);
    for (const email of [
      `${'a'.repeat(300)}@x.com`,
      `${'a'.repeat(65)}@x.com`,
      `a@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(63)}.${'e'.repeat(60)}.com`,
    ]) {
      const response = await client.postJson('/auth/register', { email, password, name: 'Long', accept_terms: true });
      expect(response.status, email.length.toString()).toBe(422);
      const body = (await response.json()) as { code: string; error: { param: string }; detail: { loc: string[]; msg: string }[] };
      expect(body).toMatchObject({ code: 'validation_error', error: { param: 'email' } });
      expect(body.detail).toEqual([expect.objectContaining({ loc: ['body', 'email'], msg: expect.stringMatching(/at most (64|254)/) })]);
      expect(await harness.database.knex('users').where({ email }).first()).toBeUndefined();
    }
    // At the limits exactly, it is an address like any other.
    const local64 = `${'a'.repeat(59)}${Date.now().toString(36).slice(-5)}@x.com`;
    expect((await client.postJson('/auth/register', { email: local64, password, name: 'Sixty-four' })).status).toBe(201);
  });

  it('accepts the HTML form, and refuses it without the terms box ticked', async () => {
    const client = new PortalClient(harness.url);
    const email = uniqueEmail();
    const refused = await client.postForm('/auth/register', { email, password, name: 'Form' });
    expect(refused.status).toBe(403);
    expect(await refused.text()).toContain('terms of service must be accepted');
    const created = await client.postForm('/auth/register', { email, password, name: 'Form', accept_terms: 'true' });
    expect(created.status).toBe(303);
    expect(created.headers.get('location')).toBe('/login?notice=check_email');
  });

  it('makes SVC_OWNER_EMAIL the owner once verified', async () => {
    const client = await signedInUser('owner@example.com');
    const me = await client.postJson('/auth/login', { email: 'OWNER@example.com', password });
    expect(await me.json()).toMatchObject({ user: { role: 'owner' } });
  });
});

describe('sign-in and sessions', () => {
  it('gives a new opaque HttpOnly SameSite=Lax session id at each sign-in, and the dashboard with it', async () => {
    const email = uniqueEmail();
    const client = await signedInUser(email);
    const first = client.cookies.get('svc_portal_sid');
    expect(first).toBeTruthy();
    const login = await client.postJson('/auth/login', { email, password });
    const setCookie = login.headers.getSetCookie().join('\n');
    expect(setCookie).toMatch(/svc_portal_sid=[^;]+; Path=\/; Expires=[^;]+; HttpOnly; SameSite=Lax/);
    expect(setCookie).not.toContain('Secure');
    expect(client.cookies.get('svc_portal_sid')).not.toBe(first);
    const dashboard = await client.get('/dashboard');
    expect(dashboard.status).toBe(200);
    expect(await dashboard.text()).toContain('Welcome, Test User');
  });

  it('sends a signed-out browser to sign in, and a JSON caller gets invalid_session', async () => {
    const anonymous = new PortalClient(harness.url);
    const page = await anonymous.get('/dashboard');
    expect(page.status).toBe(303);
    expect(page.headers.get('location')).toBe('/login?return_to=%2Fdashboard');
    const json = await anonymous.get('/dashboard', { accept: 'application/json' });
    expect(json.status).toBe(401);
    expect(await json.json()).toMatchObject({ code: 'invalid_session' });
  });

  it('ends the session at logout, for the old cookie too', async () => {
    const client = await signedInUser();
    const cookie = client.cookieHeader();
    const out = await client.get('/logout');
    expect(out.status).toBe(303);
    const replay = await fetch(`${harness.url}/dashboard`, { headers: { cookie }, redirect: 'manual' });
    expect(replay.status).toBe(303);
  });

  it('answers a wrong password and an unknown address identically with invalid_credentials', async () => {
    const email = uniqueEmail();
    await signedInUser(email);
    const client = new PortalClient(harness.url);
    const wrong = await client.postJson('/auth/login', { email, password: 'not the password 1' });
    const unknown = await client.postJson('/auth/login', { email: uniqueEmail(), password: 'not the password 1' });
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    const strip = (b: Record<string, unknown>) => ({
      ...b,
      request_id: undefined,
      error: { ...(b.error as object), request_id: undefined },
    });
    expect(strip((await wrong.json()) as Record<string, unknown>)).toEqual(strip((await unknown.json()) as Record<string, unknown>));
  });

  it('refuses password sign-in to an SSO-only account with sso_only', async () => {
    const email = uniqueEmail();
    await harness.portal.deps.users.create(
      { email, displayName: 'SSO', passwordHash: null, legalVersion: '1', emailVerified: true },
      new Date(),
    );
    const response = await new PortalClient(harness.url).postJson('/auth/login', { email, password });
    expect(response.status).toBe(403);
    expect(await response.json()).toMatchObject({ code: 'sso_only' });
  });

  it('signs a suspended account out everywhere and answers account_status (a browser is sent to the account page)', async () => {
    const email = uniqueEmail();
    const client = await signedInUser(email);
    const user = await harness.portal.deps.users.findByEmail(email);
    await harness.portal.deps.users.setStatus(user!.id, 'suspended', new Date());
    expect((await client.get('/dashboard')).status).toBe(303);
    const json = await client.postJson('/auth/login', { email, password });
    expect(json.status).toBe(403);
    expect(await json.json()).toMatchObject({
      code: 'account_status',
      error: { details: { status: 'suspended', redirect: '/account/suspended' } },
    });
    const form = await client.postForm('/auth/login', { email, password });
    expect(form.status).toBe(303);
    expect(form.headers.get('location')).toBe('/account/suspended');
    await harness.portal.deps.users.setStatus(user!.id, 'archived', new Date());
    expect((await client.postForm('/auth/login', { email, password })).headers.get('location')).toBe('/account/archived');
  });
});

describe('password reset', () => {
  it('answers the same whether or not the address exists, and resets from the emailed link once', async () => {
    const email = uniqueEmail();
    const client = await signedInUser(email);
    const anonymous = new PortalClient(harness.url);
    const known = await anonymous.postJson('/auth/forgot-password', { email });
    const unknown = await anonymous.postJson('/auth/forgot-password', { email: uniqueEmail() });
    expect(known.status).toBe(202);
    expect(await known.json()).toEqual(await unknown.json());

    // The email is made and sent after the answer (the same for an address with no account).
    await waitFor('the reset email', () => harness.lastLink(email, '/reset-password?token=') !== undefined);
    const link = new URL(await harness.emailedLink(email, '/reset-password?token='));
    const token = link.searchParams.get('token')!;
    const weak = await anonymous.postJson('/auth/reset-password', { token, password: 'short' });
    expect(weak.status).toBe(400);
    expect(await weak.json()).toMatchObject({ code: 'weak_password' });
    const long = `a1${'b'.repeat(100_000)}`;
    const tooLong = await anonymous.postJson('/auth/reset-password', { token, password: long, confirm_password: long });
    expect(tooLong.status).toBe(400);
    expect(await tooLong.json()).toMatchObject({ code: 'weak_password', human_message: expect.stringContaining('at most 256 characters') });
    const newPassword = 'a brand new password 9';
    const mismatch = await anonymous.postJson('/auth/reset-password', {
      token,
      password: newPassword,
      confirm_password: 'a brand new pasword 9',
    });
    expect(mismatch.status).toBe(422);
    expect(await mismatch.json()).toMatchObject({
      code: 'validation_error',
      human_message: 'The two passwords differ: type the same new password in both fields',
    });
    expect((await anonymous.postJson('/auth/reset-password', { token, password: newPassword, confirm_password: newPassword })).status).toBe(
      200,
    );
    expect((await anonymous.postJson('/auth/reset-password', { token, password: newPassword })).status).toBe(401);
    // The reset ended the old session, and only the new password works.
    expect((await client.get('/dashboard')).status).toBe(303);
    expect((await anonymous.postJson('/auth/login', { email, password })).status).toBe(401);
    expect((await anonymous.postJson('/auth/login', { email, password: newPassword })).status).toBe(200);
  });

  it('a dead reset link (used, replaced, never issued) answers as a dead verification link does: 401 and a page offering a new link, no form', async () => {
    const email = uniqueEmail();
    await signedInUser(email);
    const anonymous = new PortalClient(harness.url);
    const linkAfter = async (previous: string | undefined) => {
      expect((await anonymous.postJson('/auth/forgot-password', { email })).status).toBe(202);
      await waitFor('a new reset email', () => {
        const link = harness.lastLink(email, '/reset-password?token=');
        return link !== undefined && link !== previous;
      });
      return new URL(await harness.emailedLink(email, '/reset-password?token='));
    };
    const pathOf = (link: URL) => link.pathname + link.search;
    const never = await anonymous.get('/reset-password?token=garbage', { accept: 'text/html' });
    expect(never.status).toBe(401);
    expect(await never.text()).not.toContain('action="/auth/reset-password"');
    const replaced = await linkAfter(undefined);
    const used = await linkAfter(replaced.href);
    // A working link shows the form, and looking at it does not use it (twice, then the reset works).
    for (let i = 0; i < 2; i++) {
      const live = await anonymous.get(pathOf(used), { accept: 'text/html' });
      expect(live.status).toBe(200);
      expect(await live.text()).toContain('action="/auth/reset-password"');
    }
    expect(await (await anonymous.get(pathOf(used), { accept: 'application/json' })).json()).toEqual({ valid: true });
    const newPassword = 'another new password 7';
    const reset = await anonymous.postJson('/auth/reset-password', { token: used.searchParams.get('token'), password: newPassword });
    expect(reset.status).toBe(200);

    for (const path of [pathOf(used), pathOf(replaced), `/reset-password?token=${'x'.repeat(43)}`, '/reset-password?token=garbage']) {
      const page = await anonymous.get(path, { accept: 'text/html' });
      expect(page.status, path).toBe(401);
      const html = await page.text();
      expect(html).toContain('This reset link is not valid');
      expect(html).not.toContain('action="/auth/reset-password"');
      expect(html).not.toContain('name="password"');
      expect(html).toContain('action="/auth/forgot-password"');
      const json = await anonymous.get(path, { accept: 'application/json' });
      expect(json.status).toBe(401);
      expect(await json.json()).toMatchObject({ code: 'invalid_token', error: { param: 'token' } });
    }
    // Without a token: the page says where the link is; a JSON caller is told the token is missing.
    const bare = await anonymous.get('/reset-password', { accept: 'text/html' });
    expect(bare.status).toBe(200);
    expect(await bare.text()).toContain('href="/forgot-password"');
    const bareJson = await anonymous.get('/reset-password', { accept: 'application/json' });
    expect(bareJson.status).toBe(422);
    expect(await bareJson.json()).toMatchObject({ code: 'validation_error', error: { param: 'token' } });
    // The new password is the one that works.
    expect((await anonymous.postJson('/auth/login', { email, password: newPassword })).status).toBe(200);
  });

  it('resends verification with the same answer for any address', async () => {
    const email = uniqueEmail();
    const client = new PortalClient(harness.url);
    await client.postJson('/auth/register', { email, password, name: 'R' });
    await harness.mailSettled(); // the sign-up's own email, sent after its answer
    const before = harness.mail.length;
    const known = await client.postJson('/auth/resend-verification', { email });
    const unknown = await client.postJson('/auth/resend-verification', { email: uniqueEmail() });
    expect(await known.json()).toEqual(await unknown.json());
    await waitFor('the verification email', () => harness.mail.length === before + 1);
  });

  it('a resent verification link voids the one before', async () => {
    const email = uniqueEmail();
    const client = new PortalClient(harness.url);
    await client.postJson('/auth/register', { email, password, name: 'V' });
    const first = await harness.emailedLink(email, '/verify-email?token=');
    expect((await client.postJson('/auth/resend-verification', { email })).status).toBe(202);
    await waitFor('the second link', () => harness.lastLink(email, '/verify-email?token=') !== first);
    const second = harness.lastLink(email, '/verify-email?token=')!;
    expect(second).not.toBe(first);
    expect((await fetch(first, { redirect: 'manual' })).status).toBe(401);
    expect((await fetch(second, { redirect: 'manual' })).status).toBeLessThan(400);
  });

  it('bounds the emails a signed-out client can have sent: per recipient, then per client address', async () => {
    const anonymous = new PortalClient(harness.url);
    const email = uniqueEmail();
    await signedInUser(email);
    const before = harness.mail.length;
    for (let i = 0; i < 3; i++) expect((await anonymous.postJson('/auth/forgot-password', { email })).status).toBe(202);
    await waitFor('three reset emails', () => harness.mail.length === before + 3);
    const flooded = await anonymous.postJson('/auth/forgot-password', { email: email.toUpperCase() });
    expect(flooded.status).toBe(429);
    expect(Number(flooded.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await flooded.json()).toMatchObject({ code: 'rate_limit_exceeded' });
    expect(harness.mail.length).toBe(before + 3);
    // (Another client's own counter lets the owner's reset through: portal/src/features/auth/throttle.test.ts.)
    // An address without an account is counted alike: the refusal tells nothing about who exists.
    const nobody = uniqueEmail();
    for (let i = 0; i < 3; i++) expect((await anonymous.postJson('/auth/forgot-password', { email: nobody })).status).toBe(202);
    expect((await anonymous.postJson('/auth/forgot-password', { email: nobody })).status).toBe(429);
    // A form is shown the reason on the page, with the same status.
    const form = await anonymous.postForm('/auth/forgot-password', { email });
    expect(form.status).toBe(429);
    expect(await form.text()).toContain('try again later');
    // One client spreading requests over many recipients meets its own limit (SVC_AUTH_EMAILS_PER_CLIENT,
    // 80 here: this file's sign-ups count too, so it is met within 85 requests whatever ran before).
    const statuses: number[] = [];
    for (let i = 0; i < 85; i++) statuses.push((await anonymous.postJson('/auth/resend-verification', { email: uniqueEmail() })).status);
    expect(statuses).toContain(429);
    expect(statuses.slice(statuses.indexOf(429)).every((s) => s === 429)).toBe(true);
    // The window would outlast this file: the tests after this one sign people up from here too.
    await harness.portal.deps.store.del('portal:email-requests:client:127.0.0.1', 'portal:email-requests:client:::ffff:127.0.0.1');
  });
});

describe('same-origin check', () => {
  it('refuses a cross-origin POST with 403 csrf_rejected and changes nothing', async () => {
    const email = uniqueEmail();
    const evil = new PortalClient(harness.url, 'https://evil.example');
    const response = await evil.postJson('/auth/register', { email, password, name: 'Evil' });
    expect(response.status).toBe(403);
    expect(await response.json()).toMatchObject({ code: 'csrf_rejected' });
    expect(await harness.portal.deps.users.findByEmail(email)).toBeUndefined();
    const byReferer = await fetch(`${harness.url}/auth/register`, {
      method: 'POST',
      headers: { referer: 'https://evil.example/x', 'content-type': 'application/json' },
      body: JSON.stringify({ email, password, name: 'E' }),
    });
    expect(byReferer.status).toBe(403);
    const byFetchSite = await fetch(`${harness.url}/auth/register`, {
      method: 'POST',
      headers: { 'sec-fetch-site': 'cross-site', 'content-type': 'application/json' },
      body: JSON.stringify({ email, password, name: 'E' }),
    });
    expect(byFetchSite.status).toBe(403);
    expect(await harness.portal.deps.users.findByEmail(email)).toBeUndefined();
  });
});

describe('signing out', () => {
  it('a link on another site does not sign anyone out: the person is asked, and only a POST from the portal signs out', async () => {
    const client = await signedInUser(uniqueEmail());
    const fromElsewhere = { 'sec-fetch-site': 'cross-site', referer: 'https://evil.example/page' };
    const asked = await client.get('/logout', fromElsewhere);
    expect(asked.status).toBe(200);
    expect(await asked.text()).toContain('action="/logout"');
    expect((await client.get('/logout', { ...fromElsewhere, accept: 'application/json' })).status).toBe(403);
    expect((await client.get('/dashboard')).status).toBe(200);
    // A cross-site POST is refused by the same-origin check; the portal's own is obeyed.
    expect((await client.postForm('/logout', {}, { origin: 'https://evil.example' })).status).toBe(403);
    expect((await client.get('/dashboard')).status).toBe(200);
    const out = await client.postForm('/logout', {});
    expect(out.headers.get('location')).toBe('/login?notice=signed_out');
    expect((await client.get('/dashboard')).status).toBe(303);
  });

  it("the portal's own sign-out link signs out", async () => {
    const client = await signedInUser(uniqueEmail());
    const out = await client.get('/logout', { 'sec-fetch-site': 'same-origin', referer: `${harness.url}/dashboard` });
    expect(out.headers.get('location')).toBe('/login?notice=signed_out');
    expect((await client.get('/dashboard')).status).toBe(303);
  });
});

describe('login throttling', () => {
  it('holds across two portal replicas sharing the store', async () => {
    const email = uniqueEmail();
    await signedInUser(email);
    const replica = await harness.replica();
    const viaA = new PortalClient(harness.url, harness.url);
    const viaB = new PortalClient(replica.url, harness.url);
    for (let i = 0; i < 3; i++)
      expect((await (i % 2 ? viaB : viaA).postJson('/auth/login', { email, password: `wrong password ${i}x` })).status).toBe(401);
    const blocked = await viaB.postJson('/auth/login', { email, password });
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await blocked.json()).toMatchObject({ code: 'rate_limit_exceeded' });
    expect((await viaA.postJson('/auth/login', { email, password })).status).toBe(429);
  });

  it('a burst of concurrent guesses checks no more passwords than the limit (each attempt is counted before its check)', async () => {
    const email = uniqueEmail();
    await signedInUser(email);
    // 30 at once, the right password among them: at most 3 (the per-account limit) are checked.
    const attempts = Array.from({ length: 30 }, (_, i) =>
      new PortalClient(harness.url).postJson('/auth/login', { email, password: i === 12 ? password : `wrong guess ${i}x` }),
    );
    const statuses = (await Promise.all(attempts)).map((r) => r.status);
    const checked = statuses.filter((s) => s !== 429);
    expect(checked.length, statuses.join(' ')).toBeLessThanOrEqual(3);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(27);
  });

  it('a right password forgives the failures before it', async () => {
    const email = uniqueEmail();
    await signedInUser(email);
    const client = new PortalClient(harness.url);
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < 2; i++) expect((await client.postJson('/auth/login', { email, password: `wrong ${i}x` })).status).toBe(401);
      expect((await client.postJson('/auth/login', { email, password })).status).toBe(200);
    }
  });
});

describe('validation and language', () => {
  it('answers a repeated query parameter with 422 naming it (JSON) or an error page (HTML)', async () => {
    const json = await fetch(`${harness.url}/verify-email?token=a&token=b`, { headers: { accept: 'application/json' } });
    expect(json.status).toBe(422);
    expect(await json.json()).toMatchObject({
      code: 'validation_error',
      detail: [{ loc: ['query', 'token'], msg: 'must be given once, as text' }],
    });
    const page = await fetch(`${harness.url}/verify-email?token=a&token=b`);
    expect(page.status).toBe(422);
    expect(await page.text()).toContain('<strong>token</strong> (in the address)');
    // A missing one is said to be missing, and a body field of the wrong type to be the wrong type.
    const signedIn = await signedInUser(uniqueEmail());
    const missing = await signedIn.get('/api/billing/checkout-status', { accept: 'application/json' });
    expect(await missing.json()).toMatchObject({ detail: [{ loc: ['query', 'session_id'], msg: 'is required' }] });
    const numeric = await new PortalClient(harness.url).postJson('/auth/login', { email: uniqueEmail(), password: 12345 });
    expect(JSON.stringify(await numeric.json())).toContain('must be text');
  });

  it('stores the language in a cookie, and in the profile when signed in', async () => {
    const email = uniqueEmail();
    const client = await signedInUser(email);
    const response = await client.postForm('/set-language', { language: 'de', return_to: '/pricing' });
    expect(response.status).toBe(303);
    expect(response.headers.get('location')).toBe('/pricing');
    expect(client.cookies.get('svc_lang')).toBe('de');
    expect((await harness.portal.deps.users.findByEmail(email))?.language).toBe('de');
    // The selector shows the choice; the pages are in English, and say so (lang names the content).
    const pricing = await (await client.get('/pricing')).text();
    expect(pricing).toContain('<option value="de" selected>');
    expect(pricing).toContain('<html lang="en">');
    expect((await client.postJson('/set-language', { language: 'xx' })).status).toBe(422);
    // Another browser, without the cookie: once signed in, the profile's language is its choice.
    const elsewhere = new PortalClient(harness.url);
    expect((await elsewhere.postJson('/auth/login', { email, password })).status).toBe(200);
    const home = await (await elsewhere.get('/dashboard')).text();
    expect(home).toContain('<option value="de" selected>');
    expect(elsewhere.cookies.get('svc_lang')).toBe('de');
  });
});

describe('logs', () => {
  it('never contain a password, a token or a session id', async () => {
    const email = uniqueEmail();
    const client = await signedInUser(email);
    const sid = decodeURIComponent(client.cookies.get('svc_portal_sid')!);
    const log = harness.logText();
    expect(log).toContain('"route":"/auth/login"');
    expect(log).not.toContain(password);
    expect(log).not.toContain(sid.slice(2, 20));
    for (const line of harness.mail) {
      const token = /token=([^\s&]+)/.exec(line)?.[1];
      if (token) expect(log).not.toContain(token);
    }
  });
});
