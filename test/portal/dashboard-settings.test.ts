// /dashboard/settings: the profile (display name, language) saved from the form or JSON, and the
// display settings object stored as given within its bounds; 422 for anything else.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PortalClient } from '../support/portal-client.js';
import { signUp } from '../support/portal-users.js';
import { startPortalHarness, type PortalHarness } from '../support/portal-harness.js';

let portal: PortalHarness;
let client: PortalClient;
beforeAll(async () => {
  portal = await startPortalHarness();
  ({ client } = await signUp(portal, { name: 'Sam Settings' }));
});
afterAll(async () => {
  await portal?.close();
});

describe('settings', () => {
  it('saves the display name and language from the form, and shows them', async () => {
    const saved = await client.postForm('/dashboard/settings', { display_name: 'Samira S.', language: 'de' });
    expect(saved.status).toBe(303);
    const settings = (await (await client.get('/dashboard/settings', { accept: 'application/json' })).json()) as Record<string, unknown>;
    expect(settings).toMatchObject({ display_name: 'Samira S.', language: 'de', display_settings: {} });
    const page = await (await client.get('/dashboard/settings?notice=saved')).text();
    expect(page).toContain('value="Samira S."');
    expect(page).toContain('Settings saved.');
    for (const bad of [{ display_name: '' }, { language: 'xx' }, { display_name: 'x'.repeat(121) }, { colour: 'red' }])
      expect((await client.postJson('/dashboard/settings', bad)).status, JSON.stringify(bad)).toBe(422);
    // From the page: the form again with what was typed and the problem, not an error page.
    const refused = await client.postForm(
      '/dashboard/settings',
      { display_name: 'x'.repeat(121), language: 'fr' },
      { accept: 'text/html' },
    );
    expect(refused.status).toBe(422);
    const html = await refused.text();
    expect(html).toContain('Please correct the form');
    expect(html).toContain(`value="${'x'.repeat(121)}"`);
    expect(html).toMatch(/<option value="fr" selected>/);
    expect(html).toContain('data-testid="settings-form"');
  });

  it('stores the display settings object as given, within its bounds', async () => {
    const given = { theme: 'dark', table: { density: 'compact', columns: ['model', 'cost'] }, pinned: [1, 2, 3], beta: true };
    const res = await client.postJson('/dashboard/settings/display-name', given);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true, display_settings: given });
    const deep = { a: { b: { c: { d: { e: { f: { g: 1 } } } } } } };
    for (const bad of [[1, 2], { big: 'x'.repeat(9_000) }, deep, Object.fromEntries(Array.from({ length: 201 }, (_, i) => [`k${i}`, i]))]) {
      const refused = await client.postJson('/dashboard/settings/display-name', bad);
      expect(refused.status, JSON.stringify(bad).slice(0, 60)).toBe(422);
      expect(((await refused.json()) as { code: string }).code).toBe('validation_error');
    }
    // Nested far deeper than anything could serialise in the handler: refused, not a 500.
    const abyss = await client.request('POST', '/dashboard/settings/display-name', {
      jsonText: `${'{"a":'.repeat(9_000)}1${'}'.repeat(9_000)}`,
    });
    expect(abyss.status).toBe(422);
    expect(((await abyss.json()) as { human_message: string }).human_message).toContain('levels deep');
    // A bare JSON string is not even accepted by the body parser (objects and arrays only).
    expect((await client.postJson('/dashboard/settings/display-name', 'dark')).status).toBe(400);
    // An empty POST or a form does not wipe them (it stored {}): a JSON object only.
    expect((await client.request('POST', '/dashboard/settings/display-name')).status).toBe(415);
    expect((await client.postForm('/dashboard/settings/display-name', { theme: 'light' })).status).toBe(415);
    const kept = (await (await client.get('/dashboard/settings', { accept: 'application/json' })).json()) as { display_settings: unknown };
    expect(kept.display_settings).toEqual(given);
  });

  it('changes the password with the current one: other sessions end, this one stays, and the address is told', async () => {
    const user = await signUp(portal, { name: 'Pia Password' });
    const elsewhere = new PortalClient(portal.url);
    expect((await elsewhere.postJson('/auth/login', { email: user.email, password: user.password })).status).toBe(200);
    const next = 'a new password 9 today';

    // From the page: refused forms come back with the problem, and no password is sent back.
    const wrong = await user.client.postForm(
      '/dashboard/settings/password',
      { current_password: 'not it at all 1', new_password: next, confirm_password: next },
      { accept: 'text/html' },
    );
    expect(wrong.status).toBe(422);
    const wrongPage = await wrong.text();
    expect(wrongPage).toContain('current password: The current password is not right');
    expect(wrongPage).not.toContain(next);
    const mismatch = await user.client.postForm(
      '/dashboard/settings/password',
      { current_password: user.password, new_password: next, confirm_password: `${next}!` },
      { accept: 'text/html' },
    );
    expect(mismatch.status).toBe(422);
    expect(await mismatch.text()).toContain('confirm password: does not match the new password');
    for (const [body, status, param] of [
      [{ current_password: user.password, new_password: user.password }, 422, 'new_password'], // the same one
      [{ current_password: user.password, new_password: 'short1' }, 400, 'new_password'], // weak_password
      [{ current_password: user.password }, 422, 'new_password'], // missing
      // Too long, however long: the password rule's 400, not a validation error of the field.
      [{ current_password: user.password, new_password: `a1${'b'.repeat(255)}` }, 400, 'new_password'],
      [{ current_password: user.password, new_password: `a1${'b'.repeat(100_000)}` }, 400, 'new_password'],
    ] as const) {
      const refused = await user.client.postJson('/dashboard/settings/password', body);
      const { param: named } = ((await refused.json()) as { error: { param: string } }).error;
      expect([refused.status, named], JSON.stringify(body).slice(0, 200)).toEqual([status, param]);
    }
    const long = await user.client.postJson('/dashboard/settings/password', {
      current_password: user.password,
      new_password: `a1${'b'.repeat(100_000)}`,
    });
    expect(await long.json()).toMatchObject({ code: 'weak_password', human_message: expect.stringContaining('at most 256 characters') });
    // A body far too large for the server is still refused by its limit, before any handler.
    const huge = await user.client.postJson('/dashboard/settings/password', {
      current_password: user.password,
      new_password: `a1${'b'.repeat(400_000)}`,
    });
    expect(huge.status).toBe(413);
    // Nothing changed so far: the other session still works.
    expect((await elsewhere.get('/dashboard/settings', { accept: 'application/json' })).status).toBe(200);

    const changed = await user.client.postForm('/dashboard/settings/password', {
      current_password: user.password,
      new_password: next,
      confirm_password: next,
    });
    expect([changed.status, changed.headers.get('location')]).toEqual([303, '/dashboard/settings?notice=password']);
    expect(await (await user.client.get('/dashboard/settings?notice=password')).text()).toContain('Password changed');
    expect((await elsewhere.get('/dashboard/settings', { accept: 'application/json' })).status).toBe(401);
    await portal.mailSettled(); // sent after the answer
    expect(portal.mail.some((line) => line.includes(user.email) && line.includes('Your password was changed'))).toBe(true);
    const again = new PortalClient(portal.url);
    expect((await again.postJson('/auth/login', { email: user.email, password: user.password })).status).toBe(401);
    expect((await again.postJson('/auth/login', { email: user.email, password: next })).status).toBe(200);
    const activity = (await (await user.client.get('/dashboard/activity', { accept: 'application/json' })).json()) as {
      data: { kind: string }[];
    };
    expect(activity.data.map((a) => a.kind)).toContain('password_changed');
  });

  it('an account without a password (single sign-on) is pointed to a reset link instead', async () => {
    const user = await signUp(portal, { name: 'Sol Sso' });
    await portal.database.knex('users').where({ id: user.id }).update({ password_hash: null });
    const page = await (await user.client.get('/dashboard/settings')).text();
    expect(page).not.toContain('data-testid="password-form"');
    expect(page).toContain('ask for a reset link');
    const refused = await user.client.postJson('/dashboard/settings/password', { current_password: 'x', new_password: 'a new password 9' });
    expect(refused.status).toBe(409);
  });
});
