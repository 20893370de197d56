// Values the routes' own rules let through but PostgreSQL refuses (found by an outside-style
// probe): a NUL character in any text, ids past the integer columns' range, a request-log cursor
// naming a year no row has. Each was a 500, and the request-log export with such a key id hung
// with half a file. Now every one is a 422 naming what was wrong, and a stream that fails part-way
// ends instead of hanging.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPortalHarness, type PortalHarness } from '../support/portal-harness.js';
import { signUp, type SignedInUser } from '../support/portal-users.js';
import { rawExchange } from '../robustness/support.js';

let portal: PortalHarness;
let user: SignedInUser;
const json = { accept: 'application/json' };

beforeAll(async () => {
  portal = await startPortalHarness();
  user = await signUp(portal);
});
afterAll(async () => {
  await portal?.close();
});

async function expect422(response: Response, param?: string): Promise<void> {
  const text = await response.text();
  expect(response.status, text).toBe(422);
  const body = JSON.parse(text) as { code: string; error: { param?: string } };
  expect(body.code).toBe('validation_error');
  if (param !== undefined) expect(body.error.param).toBe(param);
}

describe('values the database cannot hold', () => {
  it('a NUL character anywhere in a form, a JSON body or a query string is 422 naming the field', async () => {
    await expect422(await user.client.postJson('/dashboard/reports', { name: 'a\u0000b', kind: 'usage' }), 'name');
    await expect422(await user.client.postForm('/dashboard/settings', { display_name: 'a\u0000b' }, json), 'display_name');
    await expect422(await user.client.postJson('/dashboard/settings/display-name', { nested: { a: '\u0000' } }), 'nested.a');
    await expect422(await user.client.get('/dashboard/request-log?model=gpt%00', json), 'model');
    // Nothing was stored on the way.
    const reports = (await (await user.client.get('/dashboard/reports', json)).json()) as { data: unknown[] };
    expect(reports.data).toEqual([]);
  });

  it('a name with Unicode direction controls (a spoofing right-to-left override) is 422; right-to-left text is kept', async () => {
    const signUp = await fetch(`${portal.url}/auth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ email: `rtl-${Date.now()}@example.com`, password: 'a fine password 7', name: 'Emoji \u202Enimda' }),
    });
    await expect422(signUp, 'name');
    await expect422(await user.client.postForm('/dashboard/settings', { display_name: 'x\u2066y\u2069' }, json), 'display_name');
    await expect422(await user.client.postJson('/dashboard/reports', { name: 'report\u202D', kind: 'usage' }), 'name');
    // A key whose stored name has one (made before this check) still takes an update that leaves the name alone.
    const made = (await (await user.client.postJson('/dashboard/keys/new', { name: 'plain' })).json()) as { key: { key_id: number } };
    expect(await portal.database.knex('api_keys').where({ number: made.key.key_id }).update({ name: 'old \u202Ename' })).toBe(1);
    expect((await user.client.postJson(`/dashboard/keys/${made.key.key_id}`, { action: 'update', rate_limit_rpm: 60 })).status).toBe(200);
    await expect422(await user.client.postJson(`/dashboard/keys/${made.key.key_id}`, { action: 'update', name: 'new \u202Ename' }), 'name');
    const kept = await user.client.postForm('/dashboard/settings', { display_name: 'نيو مستخدم' });
    expect(kept.status).toBe(303);
    expect(((await (await user.client.get('/dashboard/settings', json)).json()) as { display_name: string }).display_name).toBe(
      'نيو مستخدم',
    );
  });

  it('a name of only zero-width or blank characters is 422 (it shows as nothing); one with a visible character is kept', async () => {
    for (const invisible of ['\u200B\u200B', '\u2060\uFEFF', '\u3164', ' \u200D '])
      await expect422(await user.client.postForm('/dashboard/settings', { display_name: invisible }, json), 'display_name');
    await expect422(await user.client.postJson('/dashboard/keys/new', { name: '\u200B' }), 'name');
    // A visible name with a joiner inside (an emoji sequence) is fine.
    const kept = await user.client.postForm('/dashboard/settings', { display_name: 'Ada \u{1F469}\u200D\u{1F4BB}' });
    expect(kept.status).toBe(303);
  });

  it('ids past the integer columns are 422 on paths, queries and bodies; the export answers before streaming', async () => {
    await expect422(await user.client.get('/dashboard/keys/2147483648', json), 'key_id');
    await expect422(await user.client.get('/dashboard/request-log?key_id=2147483648', json), 'key_id');
    const exported = await user.client.get('/dashboard/request-log/export?key_id=2147483648', json);
    await expect422(exported, 'key_id');
    await expect422(await user.client.postJson('/dashboard/autorouter/api-key', { key_id: 2147483648, enabled: true }));
  });

  it('a request-log cursor the log did not issue is 422, whatever date it names', async () => {
    const cursor = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    for (const value of [
      ['+275760-09-13T00:00:00.000Z', 'x'],
      ['0000-01-01T00:00:00.000Z', 'x'],
      ['2026-01-01T00:00:00.000Z', '\u0000'],
    ]) {
      await expect422(await user.client.get(`/dashboard/request-log?cursor=${cursor(value)}`, json), 'cursor');
    }
  });

  it('query numbers have one message whatever is wrong, empty form fields are defaults, an empty range is named', async () => {
    for (const days of ['abc', '100', '0', '1'.repeat(30)]) {
      const answer = await user.client.get(`/dashboard/api/qualitative?days=${days}`);
      expect(answer.status, days).toBe(422);
      const body = (await answer.json()) as { detail: { msg: string }[] };
      expect(
        body.detail.map((d) => d.msg),
        days,
      ).toContain('must be a whole number of days from 1 to 90');
    }
    // Budget thresholds left empty on the form: the defaults; "50,,80" is named, not read as 50,80.
    const defaults = await user.client.postForm('/dashboard/budgets/activate', { amount_usd: '10', thresholds: '' }, json);
    expect(defaults.status).toBe(201);
    expect(((await defaults.json()) as { policy: { thresholds: number[] } }).policy.thresholds).toEqual([50, 80, 100]);
    await expect422(await user.client.postJson('/dashboard/budgets/activate', { amount_usd: '10', thresholds: '50,,80' }), 'thresholds');
    // A request-log range that ends before it starts.
    await expect422(await user.client.get('/dashboard/request-log?from=2026-11-28&to=2026-11-01', json), 'from');
  });
});

describe('a browser refused before any route', () => {
  it("gets the portal's error page, never the template engine's stack, for bodies and queries the parsers refuse", async () => {
    const page = { accept: 'text/html' };
    const refusals: [string, Promise<Response>][] = [
      ['NUL in a query', fetch(`${portal.url}/?a=%00`, { headers: page })],
      ['NUL in the return address', fetch(`${portal.url}/login?return_to=%00`, { headers: page })],
      ['a form over 64 kB', user.client.postForm('/dashboard/settings', { display_name: 'x'.repeat(70_000) }, page)],
      [
        'an unknown charset',
        fetch(`${portal.url}/auth/login`, {
          method: 'POST',
          headers: { ...page, 'content-type': 'application/x-www-form-urlencoded; charset=koi9', origin: portal.url },
          body: 'email=a',
        }),
      ],
      [
        'a gzip body that is not gzip',
        fetch(`${portal.url}/auth/login`, {
          method: 'POST',
          headers: { ...page, 'content-type': 'application/x-www-form-urlencoded', 'content-encoding': 'gzip', origin: portal.url },
          body: 'not gzip at all',
        }),
      ],
    ];
    for (const [what, pending] of refusals) {
      const response = await pending;
      const html = await response.text();
      expect(response.status, what).toBeGreaterThanOrEqual(400);
      expect(response.status, what).toBeLessThan(500);
      expect(response.headers.get('content-type'), what).toContain('text/html');
      expect(html, what).toContain('Something needs attention');
      expect(html, what).not.toMatch(/ReferenceError|node_modules|\.ejs|at eval/);
    }
  });
});

describe('requests Node refuses before the app', () => {
  it('a 100 KB address is 431 and bytes that are not HTTP are 400, each in the catalogue shape with an id, not a bare status line', async () => {
    const long = await rawExchange(portal.portal.port, [`GET /dashboard?q=${'a'.repeat(100_000)} HTTP/1.1\r\nHost: portal\r\n\r\n`]);
    expect(long.status, long.received.slice(0, 300)).toBe(431);
    expect(long.headers['content-type']).toContain('application/json');
    const tooLong = JSON.parse(long.body) as { code: string; error: { code: string; human_message: string }; request_id: string };
    expect(tooLong.error.code).toBe('request_too_large');
    expect(tooLong.code).toBe('request_too_large');
    expect(tooLong.error.human_message).toContain('larger than the portal accepts');
    expect(tooLong.request_id).toBe(long.headers['x-request-id']);
    expect(long.closedByServer).toBe(true);

    const garbage = await rawExchange(portal.portal.port, ['NOT HTTP AT ALL\r\n\r\n']);
    expect(garbage.status, garbage.received.slice(0, 300)).toBe(400);
    expect((JSON.parse(garbage.body) as { error: { code: string } }).error.code).toBe('invalid_request');
  });
});

/**
 * The query a browser sends for the page's first GET form left as it is: every named input with its
 * value (blank when it has none), every select with its selected option (else its first).
 */
function defaultQuery(html: string): string {
  const form = /<form\b(?![^>]*method="post")[^>]*>([\s\S]*?)<\/form>/i.exec(html)?.[1] ?? '';
  const fields: [string, string][] = [];
  for (const input of form.matchAll(/<input\b[^>]*>/gi)) {
    const name = /\bname="([^"]*)"/.exec(input[0])?.[1];
    if (name && !/type="(submit|button)"/.test(input[0])) fields.push([name, /\bvalue="([^"]*)"/.exec(input[0])?.[1] ?? '']);
  }
  for (const select of form.matchAll(/<select\b[^>]*name="([^"]*)"[^>]*>([\s\S]*?)<\/select>/gi)) {
    const options = [...select[2]!.matchAll(/<option\b[^>]*value="([^"]*)"([^>]*)>/gi)];
    const chosen = options.find((o) => /selected/.test(o[2]!)) ?? options[0];
    fields.push([select[1]!, chosen?.[1] ?? '']);
  }
  return new URLSearchParams(fields).toString();
}

describe('filter forms sent as browsers send them', () => {
  it('a blank field is a field not given: each filter form, submitted as it stands, answers its page, not a 422', async () => {
    const admin = await signUp(portal, { role: 'owner' });
    const pages: [SignedInUser, string][] = [
      [user, '/dashboard/usage'],
      [user, '/dashboard/request-log'],
      [user, '/dashboard/keys'],
      [admin, '/dashboard/admin/users'],
    ];
    for (const [who, path] of pages) {
      const query = defaultQuery(await (await who.client.get(path, { accept: 'text/html' })).text());
      expect(query, `${path}: a blank field`).toMatch(/=(&|$)/);
      const page = await who.client.get(`${path}?${query}`, { accept: 'text/html' });
      expect(page.status, `${path}?${query}`).toBe(200);
    }
    // A value that is there is still checked.
    await expect422(await user.client.get('/dashboard/usage?split_by=colour', json), 'split_by');
  });
});

describe('fields a limit-setting endpoint does not take', () => {
  it('are refused naming them, not dropped with the limit they meant to set', async () => {
    const admin = await signUp(portal, { role: 'platform_admin' });
    const cases = [
      [user.client, '/dashboard/keys/new', { name: 'k', rate_limit: 5 }, 'rate_limit'],
      [user.client, '/dashboard/budgets/activate', { amount_usd: 5, hardStop: true }, 'hardStop'],
      [admin.client, '/dashboard/admin/organisations', { name: 'Delta', slug: 'delta', monthly_budget: 5 }, 'monthly_budget'],
      [user.client, '/dashboard/projects', { name: 'P', budget: 5 }, 'budget'],
    ] as const;
    for (const [client, path, body, field] of cases) {
      const answer = await client.postJson(path, body);
      expect(answer.status, path).toBe(422);
      expect(await answer.text(), path).toContain(`it does not take: ${field}`);
    }
    // The key page's own update form sends `action` beside the fields: still taken.
    const created = (await (await user.client.postJson('/dashboard/keys/new', { name: 'kept' })).json()) as { key: { key_id: string } };
    const updated = await user.client.postJson(`/dashboard/keys/${created.key.key_id}`, { action: 'update', rate_limit_rpm: 7 });
    expect(updated.status, await updated.clone().text()).toBe(200);
  });
});

describe('text the database would change, and bodies no parser reads', () => {
  it('half a surrogate pair anywhere is 422 naming the field; a text/plain or multipart body is 415, not a 200 that changed nothing; charsets, encodings and broken JSON each have their code', async () => {
    await expect422(await user.client.postJson('/dashboard/settings', { display_name: 'a\ud800b' }), 'display_name');
    await expect422(await user.client.postJson('/dashboard/reports', { name: '\udc00', kind: 'usage' }), 'name');
    // A whole pair (an emoji) is text like any other.
    expect((await user.client.postJson('/dashboard/settings', { display_name: 'Ada 🚀' })).status).toBe(200);
    for (const type of ['text/plain', 'multipart/form-data; boundary=x']) {
      const answer = await fetch(`${user.client.url}/dashboard/settings`, {
        method: 'POST',
        headers: { origin: user.client.origin, cookie: user.client.cookieHeader(), 'content-type': type, ...json },
        body: '{"display_name":"x"}',
      });
      expect(answer.status, type).toBe(415);
      expect(await answer.json()).toMatchObject({ code: 'unsupported_media_type' });
    }
    // Bodies the parsers refuse, each by its own code: a charset they do not read, a compressed
    // body, JSON that does not parse.
    const refused = [
      [{ 'content-type': 'application/json; charset=latin1' }, '{"display_name":"x"}', 415, 'unsupported_media_type', 'charset "latin1"'],
      [
        { 'content-type': 'application/json', 'content-encoding': 'compress' },
        'xx',
        415,
        'unsupported_media_type',
        'Content-Encoding "compress"',
      ],
      [{ 'content-type': 'application/json', 'content-encoding': 'gzip' }, 'not gzip', 400, 'invalid_request', 'could not be decompressed'],
      [{ 'content-type': 'application/json' }, '{"display_name":', 400, 'invalid_json', 'not valid JSON'],
    ] as const;
    for (const [headers, body, status, code, says] of refused) {
      const answer = await fetch(`${user.client.url}/dashboard/settings`, {
        method: 'POST',
        headers: { origin: user.client.origin, cookie: user.client.cookieHeader(), ...json, ...headers },
        body,
      });
      const text = await answer.text();
      expect(answer.status, text).toBe(status);
      const error = JSON.parse(text) as { code: string; human_message: string };
      expect(error.code, text).toBe(code);
      expect(error.human_message, text).toContain(says);
    }
  });
});
