// The invite landing page, path-parameter validation, and the legal acceptance API.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PortalClient } from '../support/portal-client.js';
import { startPortalHarness, type PortalHarness } from '../support/portal-harness.js';
import { signUp } from '../support/portal-users.js';
import { waitFor } from '../support/wait-for.js';

let harness: PortalHarness;
beforeAll(async () => {
  harness = await startPortalHarness({ settings: { SVC_LEGAL_VERSION: '2026-02' } });
});
afterAll(async () => {
  await harness?.close();
});

describe('/invite/{token}', () => {
  it('shows the invitation with a sign-in button, and explains a revoked one', async () => {
    const { deps } = harness.portal;
    const org = await new (await import('../../core/identity/index.js')).OrganisationRepository(deps.database).create(
      'Acme Research',
      `acme-${Date.now()}`,
      new Date(),
    );
    const { id, secret } = await deps.invites.create(
      { email: 'new.hire@example.com', organisationId: org.id, role: 'department_admin', invitedBy: null },
      new Date(),
    );
    const page = await fetch(`${harness.url}/invite/${secret}`);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('<title>Join Acme Research · svc platform</title>');
    expect(html).toContain('new.hire@example.com');
    expect(html).toContain('department admin');
    expect(html).toContain(`href="/login?return_to=%2Finvite%2F${secret}"`);
    expect(harness.logText()).toContain('"route":"/invite/:token"');
    // Refused before routing (a foreign origin, a body that does not parse, a wrong content type): unmatched, its secret cut out.
    const accept = `${harness.url}/invite/${secret}/accept`;
    expect((await fetch(accept, { method: 'POST', headers: { origin: 'http://elsewhere.example' } })).status).toBe(403);
    const broken = { method: 'POST', headers: { origin: harness.url, 'content-type': 'application/json' }, body: '{' };
    expect((await fetch(accept, broken)).status).toBe(400);
    expect(harness.logText()).toContain(`"path":"/invite/:redacted(${secret.length})/accept"`);
    expect(harness.logText()).not.toContain(secret);
    await deps.invites.revoke(id);
    expect(await (await fetch(`${harness.url}/invite/${secret}`)).text()).toContain('This invitation was withdrawn');
  });

  it('a new user signs up from the invitation, with its address filled in, and is brought back to it to accept', async () => {
    const { deps } = harness.portal;
    const org = await new (await import('../../core/identity/index.js')).OrganisationRepository(deps.database).create(
      'Invite Path',
      `path-${Date.now()}`,
      new Date(),
    );
    const email = `invited-${Date.now()}@example.com`;
    const { secret } = await deps.invites.create({ email, organisationId: org.id, role: 'member', invitedBy: null }, new Date());
    const invitePath = `/invite/${secret}`;
    const client = new PortalClient(harness.url);
    const landing = await (await client.get(invitePath)).text();
    const signupHref = /href="(\/signup\?[^"]+)" data-testid="invite-signup"/.exec(landing)?.[1];
    expect(signupHref, 'the invitation links to sign-up').toBeDefined();
    const signup = await (await client.get(signupHref!.replaceAll('&amp;', '&'))).text();
    expect(signup).toContain(`value="${email}"`);
    expect(signup).toContain(`name="return_to" value="${invitePath}"`);

    const registered = await client.postForm('/auth/register', {
      name: 'New Hire',
      email,
      password: 'invited password 42',
      accept_terms: 'true',
      return_to: invitePath,
    });
    expect(registered.status).toBe(303);
    expect(registered.headers.get('location')).toBe(`/login?notice=check_email&return_to=${encodeURIComponent(invitePath)}`);
    // The link is opened from the mailbox, not the tab the sign-up began in: it carries the
    // invitation, and the verified page's Sign in leads back to it (it went to plain /login).
    const link = new URL(await harness.emailedLink(email, '/verify-email?token='));
    expect(link.searchParams.get('return_to')).toBe(invitePath);
    const verified = await client.get(link.pathname + link.search);
    expect(verified.status).toBe(200);
    const signInHref = /<a class="button" href="([^"]+)">Sign in<\/a>/.exec(await verified.text())?.[1];
    expect(signInHref).toBe(`/login?return_to=${encodeURIComponent(invitePath)}`);
    const login = await (await client.get(signInHref!)).text();
    expect(login).toContain(`name="return_to" value="${invitePath}"`);
    const signedIn = await client.postForm('/auth/login', { email, password: 'invited password 42', return_to: invitePath });
    expect(signedIn.headers.get('location')).toBe(invitePath);
    expect(await (await client.get(invitePath)).text()).toContain('data-testid="invite-accept"');
    // A return_to that leaves the portal is dropped on the way: from the redirect, the link, the verified page.
    const offsiteEmail = `x-${Date.now()}@example.com`;
    const offsite = await client.postForm('/auth/register', {
      name: 'X',
      email: offsiteEmail,
      password: 'invited password 42',
      accept_terms: 'true',
      return_to: '//evil.example',
    });
    expect(offsite.headers.get('location')).toBe('/login?notice=check_email');
    const offsiteLink = new URL(await harness.emailedLink(offsiteEmail, '/verify-email?token='));
    expect(offsiteLink.searchParams.has('return_to')).toBe(false);
    offsiteLink.searchParams.set('return_to', '//evil.example');
    const offsitePage = await (await client.get(offsiteLink.pathname + offsiteLink.search)).text();
    expect(offsitePage).toContain('<a class="button" href="/login">Sign in</a>');
  });

  // Found by an outside probe: a member offered "Accept and join" an organisation they were in,
  // which did nothing; an accepted invitation told a signed-in person to "Sign in to continue".
  it('tells a signed-in member where they stand instead of a button that changes nothing', async () => {
    const { deps } = harness.portal;
    const { OrganisationRepository } = await import('../../core/identity/index.js');
    const organisations = new OrganisationRepository(deps.database);
    const org = await organisations.create('Standing Ltd', `standing-${Date.now()}`, new Date());
    const other = await organisations.create('Elsewhere Ltd', `elsewhere-${Date.now()}`, new Date());
    const member = await signUp(harness, { organisationId: org.id });
    const outsider = await signUp(harness, { organisationId: other.id });
    const invite = async (email: string, role: 'member' | 'org_admin') =>
      `/invite/${(await deps.invites.create({ email, organisationId: org.id, role, invitedBy: null }, new Date())).secret}`;

    const same = await (await member.client.get(await invite(member.email, 'member'))).text();
    expect(same).toContain('You are a member of Standing Ltd already, as member.');
    expect(same).not.toContain('data-testid="invite-accept"');
    // One that raises the role is still offered, and accepting it takes effect.
    const raising = await invite(member.email, 'org_admin');
    expect(await (await member.client.get(raising)).text()).toContain('data-testid="invite-accept"');
    expect((await member.client.postJson(`${raising}/accept`, {})).status).toBe(200);
    const accepted = await (await member.client.get(raising)).text();
    expect(accepted).toContain('This invitation has already been accepted.');
    expect(accepted).not.toContain('Sign in to continue');
    expect(accepted).toContain('You are a member of Standing Ltd already, as org admin.');

    const elsewhere = await (await outsider.client.get(await invite(outsider.email, 'member'))).text();
    expect(elsewhere).toContain('You belong to another organisation');
    expect(elsewhere).not.toContain('data-testid="invite-accept"');
  });

  it('a verification link sent again keeps the invitation the sign-up began at', async () => {
    const client = new PortalClient(harness.url);
    const email = `again-${Date.now()}@example.com`;
    const invitePath = '/invite/some-invitation';
    await client.postForm('/auth/register', {
      name: 'Again',
      email,
      password: 'invited password 42',
      accept_terms: 'true',
      return_to: invitePath,
    });
    // The resend form of the page a used or expired link opens carries it.
    const first = await harness.emailedLink(email, '/verify-email?token=');
    const page = await (await client.get(`/verify-email?token=not-a-token&return_to=${encodeURIComponent(invitePath)}`)).text();
    expect(page).toContain(`name="return_to" value="${invitePath}"`);
    expect((await client.postForm('/auth/resend-verification', { email, return_to: invitePath })).status).toBe(200);
    await waitFor('the new link', async () => harness.lastLink(email, '/verify-email?token=') !== first);
    expect(new URL(await harness.emailedLink(email, '/verify-email?token=')).searchParams.get('return_to')).toBe(invitePath);
  });

  it('answers an unknown token with a 404 page and an over-long one with 422 naming the parameter', async () => {
    const unknown = await fetch(`${harness.url}/invite/${'a'.repeat(43)}`);
    expect(unknown.status).toBe(404);
    expect(await unknown.text()).toContain('This invitation link is not valid');
    const long = await fetch(`${harness.url}/invite/${'a'.repeat(300)}`, { headers: { accept: 'application/json' } });
    expect(long.status).toBe(422);
    expect(await long.json()).toMatchObject({
      code: 'validation_error',
      message: expect.stringMatching(/^validation_error - /),
      human_message: expect.stringContaining('token'),
      detail: [{ loc: ['path', 'token'], type: 'too_big' }],
      error: { code: 'validation_error', param: 'token' },
    });
  });
});

describe('/api/legal', () => {
  it('needs a session, then reports and records acceptance of the version in force', async () => {
    const anonymous = await fetch(`${harness.url}/api/legal/status`);
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toMatchObject({ code: 'invalid_session' });

    const email = `legal-${Date.now()}@example.com`;
    await harness.portal.deps.users.create(
      { email, displayName: 'L', passwordHash: null, legalVersion: '2025-01', emailVerified: true },
      new Date(),
    );
    const user = await harness.portal.deps.users.findByEmail(email);
    // Signed in through a session row made the way signIn makes it.
    const client = new PortalClient(harness.url);
    await harness.portal.deps.users.setPasswordHash(
      user!.id,
      await (await import('../../core/identity/index.js')).hashPassword('legal test password 1'),
      new Date(),
    );
    expect((await client.postJson('/auth/login', { email, password: 'legal test password 1' })).status).toBe(200);

    expect(await (await client.get('/api/legal/status')).json()).toEqual({
      current_version: '2026-02',
      accepted_version: '2025-01',
      accepted: false,
    });
    const wrong = await client.postJson('/api/legal/accept', { version: '2025-01' });
    expect(wrong.status).toBe(422);
    const accepted = await client.postJson('/api/legal/accept', {});
    expect(await accepted.json()).toEqual({ current_version: '2026-02', accepted_version: '2026-02', accepted: true });
    expect(await (await client.get('/api/legal/status')).json()).toMatchObject({ accepted: true });
  });

  it('shows the version in force on the legal pages', async () => {
    expect(await (await fetch(`${harness.url}/legal/terms`)).text()).toContain('Version 2026-02');
  });
});
