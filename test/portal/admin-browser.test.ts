// Administration in a real browser (Chromium through playwright-core): an org admin invites a
// user from the invite page, the invitee accepts in a second browser context and lands in the
// organisation, then the admin changes their role and suspends them — each step seen on screen.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { launchChromium, screenshot, signInPage } from '../support/browser.js';
import type { PortalHarness } from '../support/portal-harness.js';
import { signUp, startPortalWithGateway } from '../support/portal-users.js';

let world: Awaited<ReturnType<typeof startPortalWithGateway>>;
let portal: PortalHarness;
let browser: Browser;
beforeAll(async () => {
  world = await startPortalWithGateway();
  ({ portal } = world);
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await world?.close();
});

describe("a fresh install (before any organisation exists: this file's first test)", () => {
  it('the departments page sends the owner to create an organisation first, rather than a form that cannot succeed', async () => {
    expect(Number(((await portal.database.knex('organisations').count({ n: '*' }).first()) as { n: string | number }).n)).toBe(0);
    const owner = await signUp(portal, { role: 'platform_admin' });
    const page = await (await owner.client.get('/dashboard/admin/departments', { accept: 'text/html' })).text();
    expect(page).toContain('data-testid="department-needs-organisation"');
    expect(page).toContain('href="/dashboard/admin/organisations"');
    expect(page).not.toContain('data-testid="department-create"');
  });
});

describe('administration in the browser', () => {
  it('invite, accept in a second context, change the role, suspend', async () => {
    const knex = portal.database.knex;
    const [org] = (await knex('organisations')
      .insert({ name: 'Browser Org', slug: `browser-${Date.now()}` })
      .returning('id')) as { id: number }[];
    const admin = await signUp(portal, { organisationId: org!.id, role: 'org_admin', name: 'Ada Admin', password: 'browser password 42' });
    const inviteeEmail = `newcomer-${Date.now()}@example.com`;

    const adminPage = await signInPage(browser, portal.url, admin, '/dashboard/admin/users/invite');
    try {
      const page = adminPage.page;
      await page.fill('#email', inviteeEmail);
      await page.click('[data-testid=invite-send]');
      await page.waitForSelector('[data-testid=invite-sent]');
      expect(await page.textContent('[data-testid=invites-table] [data-field=status]')).toContain('pending');
      await screenshot(page, 'admin-invite');

      const invitee = await signUp(portal, { email: inviteeEmail, name: 'Nina Newcomer', password: 'browser password 43' });
      const link = new URL(await portal.emailedLink(inviteeEmail, '/invite/'));
      const inviteePage = await signInPage(browser, portal.url, invitee, '/dashboard');
      try {
        await inviteePage.page.goto(link.pathname);
        await inviteePage.page.click('[data-testid=invite-accept]');
        await inviteePage.page.waitForURL('**/dashboard');
        expect(inviteePage.problems).toEqual([]);
      } finally {
        await inviteePage.close();
      }
      const joined = (await knex('users').where({ id: invitee.id }).first('organisation_id')) as { organisation_id: number };
      expect(joined.organisation_id).toBe(org!.id);

      await page.goto('/dashboard/admin/users');
      await page.click(`[data-testid=users-table] tr[data-user="${invitee.id}"] a`);
      await page.waitForSelector('[data-testid=user-manage]');
      await page.selectOption('#role', 'department_admin');
      await page.click('[data-testid=save-role]');
      await page.waitForURL(`**/dashboard/admin/users/${invitee.id}?notice=role`);
      expect(await page.textContent('.page-header .tag')).toBe('department admin');
      await page.selectOption('#status', 'suspended');
      await page.click('[data-testid=save-status]');
      await page.waitForURL(`**/dashboard/admin/users/${invitee.id}?notice=status`);
      expect(await page.textContent('[data-testid=user-status]')).toBe('suspended');
      await screenshot(page, 'admin-user-detail');
      expect(adminPage.problems).toEqual([]);
    } finally {
      await adminPage.close();
    }
  });
});

describe('organisations in the browser', () => {
  it('a platform admin creates an organisation and deletes it with its Delete button', async () => {
    const platform = await signUp(portal, { role: 'platform_admin', password: 'browser password 44' });
    const session = await signInPage(browser, portal.url, platform, '/dashboard/admin/organisations');
    try {
      const page = session.page;
      await page.fill('#new-name', 'Short Lived Org');
      await page.click('[data-testid=org-create] button[type=submit]');
      await page.waitForURL('**/dashboard/admin/organisations?notice=created');
      const row = page.locator('[data-testid=organisations-table] tr', { hasText: 'Short Lived Org' });
      await row.locator('summary').click();
      await row.locator('[data-delete-org]').click();
      await page.waitForURL('**/dashboard/admin/organisations?notice=deleted');
      expect(await page.locator('[data-testid=organisations-table] tr', { hasText: 'Short Lived Org' }).count()).toBe(0);
      await screenshot(page, 'admin-organisations');
      expect(session.problems).toEqual([]);
    } finally {
      await session.close();
    }
  });

  it('an org admin creates a department from the nav, renames it and deletes it', async () => {
    const knex = portal.database.knex;
    const [org] = (await knex('organisations')
      .insert({ name: 'Team Org', slug: `team-${Date.now()}` })
      .returning('id')) as { id: number }[];
    const admin = await signUp(portal, { organisationId: org!.id, role: 'org_admin', password: 'browser password 45' });
    const session = await signInPage(browser, portal.url, admin, '/dashboard');
    try {
      const page = session.page;
      await page.click('nav.side-nav a[href="/dashboard/admin/departments"]');
      await page.waitForURL('**/dashboard/admin/departments');
      await page.fill('#new-department-name', 'Research');
      await page.click('[data-testid=department-create] button[type=submit]');
      await page.waitForURL('**/dashboard/admin/departments?notice=created');
      const row = page.locator('[data-testid=departments-table] tr', { hasText: 'Research' });
      expect(await row.locator('[data-field=members]').textContent()).toBe('0');
      await row.locator('summary').click();
      await row.locator('input[name=name]').fill('Research and Development');
      await row.locator('button', { hasText: 'Rename' }).click();
      await page.waitForURL('**/dashboard/admin/departments?notice=renamed');
      expect(await page.textContent('[data-testid=departments-table]')).toContain('Research and Development');
      await screenshot(page, 'admin-departments');
      const renamed = page.locator('[data-testid=departments-table] tr', { hasText: 'Research and Development' });
      await renamed.locator('summary').click();
      await renamed.locator('button', { hasText: 'Delete' }).click();
      await page.waitForURL('**/dashboard/admin/departments?notice=deleted');
      expect(await page.textContent('main, body')).toContain('No department yet');
      expect(session.problems).toEqual([]);
    } finally {
      await session.close();
    }
  });
});
