// The administrators' create forms (a promotion grant, an invitation, an organisation, a
// department) refused from the page: the page again with the refusal's status, each problem
// beside the form and every field as typed — not an error page that loses the input. JSON callers
// keep the error body. And the menu those pages share: grouped, Administration only for administrators.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signUp, type SignedInUser } from '../support/portal-users.js';
import { startPortalHarness, type PortalHarness } from '../support/portal-harness.js';

let portal: PortalHarness;
let platform: SignedInUser;
let organisationId: number;
beforeAll(async () => {
  portal = await startPortalHarness();
  platform = await signUp(portal, { role: 'platform_admin', name: 'Pat Platform' });
  const made = await platform.client.postJson('/dashboard/admin/organisations', { name: 'Forms Ltd' });
  organisationId = ((await made.json()) as { organisation: { id: number } }).organisation.id;
});
afterAll(async () => {
  await portal?.close();
});

/** Sends a form as a browser does and reads the page that comes back. */
const refusedPage = async (path: string, form: Record<string, string>, status: number) => {
  const res = await platform.client.postForm(path, form, { accept: 'text/html' });
  const html = await res.text();
  expect(res.status, html.slice(0, 500)).toBe(status);
  expect(html).toContain('Please correct the form');
  expect(html).not.toContain('error-card');
  return html;
};

describe('administrators’ forms refused from the page', () => {
  it('a promotion grant for an unknown email keeps the amount, expiry, reason and the form’s one-use nonce', async () => {
    const html = await refusedPage(
      '/dashboard/admin/promotions/create',
      {
        email: 'nobody@example.test',
        amount_usd: '12.50',
        expires_at: '2031-01-31',
        reason: 'Launch “offer” <b>',
        nonce: 'kept-nonce-123',
      },
      404,
    );
    expect(html).toContain('email: There is no user with this email');
    expect(html).toContain('value="nobody@example.test"');
    expect(html).toContain('value="12.50"');
    expect(html).toContain('value="2031-01-31"');
    expect(html).toContain('value="Launch “offer” &lt;b&gt;"');
    expect(html).toContain('name="nonce" value="kept-nonce-123"');
    // A nonce the form could not have sent is not echoed: a fresh one replaces it.
    const odd = await refusedPage('/dashboard/admin/promotions/create', { email: 'x', amount_usd: '1', reason: 'r', nonce: '"><b>' }, 422);
    expect(odd).not.toContain('&#34;&gt;&lt;b&gt;');
    expect(odd).toMatch(/name="nonce" value="[A-Za-z0-9_-]{20,}"/);
    // The JSON caller still gets the catalogue error.
    const json = await platform.client.postJson('/dashboard/admin/promotions/create', {
      email: 'nobody@example.test',
      amount_usd: 1,
      reason: 'r',
    });
    expect(json.status).toBe(404);
    expect(((await json.json()) as { error: { code: string } }).error.code).toBe('not_found');
  });

  it('an invitation above the inviter’s role keeps the email, role and organisation chosen', async () => {
    const html = await refusedPage(
      '/dashboard/admin/users/invite',
      { email: 'new.person@example.test', role: 'not-a-role', org_id: String(organisationId) },
      422,
    );
    expect(html).toContain('value="new.person@example.test"');
    expect(html).toContain(`<option value="${organisationId}" selected>Forms Ltd</option>`);
    const role = await refusedPage(
      '/dashboard/admin/users/invite',
      { email: 'member@example.test', role: 'org_admin', org_id: '999999' },
      404,
    );
    expect(role).toContain('org id: There is no such organisation');
    expect(role).toMatch(/<option value="org_admin" selected>/);
  });

  it('an organisation with a malformed slug keeps its name and slug', async () => {
    const html = await refusedPage('/dashboard/admin/organisations', { name: 'Beta & Co', slug: 'Not A Slug!' }, 422);
    expect(html).toContain('value="Beta &amp; Co"');
    expect(html).toContain('value="Not A Slug!"');
    expect(html).toMatch(/slug: /);
  });

  it('a name with a direction control is refused beside the form too, not on an error page', async () => {
    const html = await refusedPage('/dashboard/admin/organisations', { name: 'Evil \u202Enimda org', slug: 'evil' }, 422);
    expect(html).toMatch(/name: must not contain Unicode direction controls/);
    expect(html).toContain('value="evil"');
  });

  it('a department with no name keeps the organisation chosen', async () => {
    const html = await refusedPage('/dashboard/admin/departments', { name: '', org_id: String(organisationId) }, 422);
    expect(html).toMatch(/name: /);
    expect(html).toContain(`<option value="${organisationId}" selected>Forms Ltd</option>`);
  });

  it('the menu groups its links, and shows Administration only to those who administer', async () => {
    const menu = async (client: SignedInUser['client']) =>
      /<nav class="side-nav"[^>]*>([\s\S]*?)<\/nav>/.exec(await (await client.get('/dashboard')).text())?.[1] ?? '';
    const titles = (nav: string) => [...nav.matchAll(/<p class="side-nav-title">([^<]+)<\/p>/g)].map((m) => m[1]);
    const admins = await menu(platform.client);
    expect(titles(admins)).toEqual(['Your usage', 'Spending', 'Models', 'Administration', 'Account']);
    expect(admins).toContain('href="/dashboard/admin/promotions"');
    const member = await signUp(portal, { name: 'Mo Member' });
    const members = await menu(member.client);
    expect(titles(members)).toEqual(['Your usage', 'Spending', 'Models', 'Account']);
    expect(members).not.toContain('/dashboard/admin');
    expect(members).toContain('href="/dashboard" aria-current="page"');
  });
});
