// Every public GET page of the portal answers 200 HTML with a title, the navigation and real
// content; static assets carry cache headers; unknown paths are a 404 page, never a 500.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPortalHarness, type PortalHarness } from '../support/portal-harness.js';
import { waitFor } from '../support/wait-for.js';

/** The seed's public and session pages (the invite landing is tested with the invites). */
export const publicPages = [
  '/login',
  '/signup',
  '/forgot-password',
  '/reset-password',
  '/verify-email',
  '/',
  '/pricing',
  '/features',
  '/api-docs',
  '/guide',
  '/security',
  '/models-public',
  '/controls',
  '/certifications',
  '/developers',
  '/agents',
  '/resources',
  '/partners',
  '/architecture',
  '/platform',
  '/contact',
  '/legal/terms',
  '/legal/aup',
  '/legal/privacy',
  '/legal/cookies',
  '/legal/dpa',
  '/legal/refund',
  '/legal/billing',
  '/legal/security',
  '/account/archived',
  '/account/suspended',
];

let harness: PortalHarness;
beforeAll(async () => {
  harness = await startPortalHarness();
});
afterAll(async () => {
  await harness?.close();
});

describe('public pages', () => {
  it('the home page says how many of the models it counts it lists, and where the rest are', async () => {
    const html = await (await fetch(`${harness.url}/`)).text();
    const count = Number(/(\d+) models available today/.exec(html)?.[1]);
    const listed = /<h2>\d+ models available today<\/h2>[\s\S]*?<tbody>([\s\S]*?)<\/tbody>/.exec(html)?.[1]?.match(/<tr>/g)?.length ?? 0;
    expect(count).toBeGreaterThan(0);
    if (count > listed) expect(html).toContain(`<a href="/pricing">pricing</a> lists all ${count}`);
    else expect(listed).toBe(count);
  });

  it.each(publicPages)('%s answers 200 HTML with a title, navigation and content', async (path) => {
    const response = await fetch(`${harness.url}${path}`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await response.text();
    expect(html).toMatch(/<title>[^<]+ · svc platform<\/title>/);
    expect(html).toContain('<nav class="main-nav"');
    expect(html).toMatch(/<h1>[^<]+<\/h1>/);
    // Real content inside <main>, not just the layout around an empty page.
    const main = /<main[^>]*>([\s\S]*)<\/main>/.exec(html)?.[1] ?? '';
    expect(
      main
        .replace(/<[^>]+>/g, ' ')
        .replace(/\s+/g, ' ')
        .trim().length,
    ).toBeGreaterThan(100);
  });

  it('prices every catalogue model on /pricing and /models-public', async () => {
    const pricing = await (await fetch(`${harness.url}/pricing`)).text();
    for (const id of harness.portal.deps.catalogue.routes.keys()) expect(pricing).toContain(`<code>${id}</code>`);
    expect(pricing).toContain('$0.15 / 1M input tokens');
    const models = await (await fetch(`${harness.url}/models-public`)).text();
    expect(models).toContain('$0.006 / audio minute');
  });

  it('counts requests by route pattern on its own metrics port', async () => {
    await fetch(`${harness.url}/legal/terms`);
    const text = await (await fetch(harness.portal.metricsUrl!)).text();
    expect(text).toMatch(/svc_portal_requests_total\{route="\/legal\/terms",method="GET",status="200"\} [1-9]/);
    expect(text).toContain('svc_portal_logins_total');
  });

  it('serves the stylesheet with cache headers', async () => {
    const response = await fetch(`${harness.url}/static/css/site.css`);
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('public, max-age=86400');
    expect(response.headers.get('etag')).toBeTruthy();
  });

  it('answers an unknown path with a 404 page, and JSON to a JSON caller', async () => {
    const page = await fetch(`${harness.url}/no-such-page`);
    expect(page.status).toBe(404);
    expect(await page.text()).toContain('There is no page at this address');
    const json = await fetch(`${harness.url}/no-such-page`, { headers: { accept: 'application/json' } });
    expect(json.status).toBe(404);
    expect(await json.json()).toMatchObject({
      code: 'not_found',
      human_message: 'There is no page at this address',
      error: { code: 'not_found' },
    });
  });

  it('negotiates errors by Accept: malformed JSON from a caller preferring HTML gets the error page; /verify-email without a token asked as JSON gets JSON', async () => {
    const post = (accept: string | undefined) =>
      fetch(`${harness.url}/auth/login`, {
        method: 'POST',
        headers: { origin: harness.url, 'content-type': 'application/json', ...(accept ? { accept } : {}) },
        body: '{"email":',
      });
    const page = await post('text/html');
    expect(page.status).toBe(400);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await page.text()).toContain('The request body is not valid JSON');
    const browser = await post('text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8');
    expect(browser.headers.get('content-type')).toMatch(/^text\/html/);
    // A JSON caller, or one that says nothing (or anything), still gets JSON for its JSON body.
    for (const accept of ['application/json', undefined, '*/*', 'application/json, text/html;q=0.5']) {
      const json = await post(accept);
      expect(json.status, String(accept)).toBe(400);
      expect(await json.json()).toMatchObject({ code: 'invalid_json' });
    }

    const verifyJson = await fetch(`${harness.url}/verify-email`, { headers: { accept: 'application/json' } });
    expect(verifyJson.status).toBe(422);
    expect(await verifyJson.json()).toMatchObject({ code: 'validation_error', error: { param: 'token' } });
    const verifyPage = await fetch(`${harness.url}/verify-email`, { headers: { accept: 'text/html' } });
    expect(verifyPage.status).toBe(200);
    expect(await verifyPage.text()).toContain('action="/auth/resend-verification"');
  });

  it('answers a wrong method on an existing path with 405 and Allow (page or JSON), and a real unknown path still with 404', async () => {
    const { signUp } = await import('../support/portal-users.js');
    const { client } = await signUp(harness);
    const origin = { origin: harness.url };
    for (const [method, path, allow] of [
      ['PUT', '/dashboard/keys/new', 'GET, HEAD, POST'],
      ['DELETE', '/dashboard/settings', 'GET, HEAD'],
      ['PATCH', '/dashboard/keys/11', 'GET, HEAD, POST'],
      ['DELETE', '/login', 'GET, HEAD'],
    ] as const) {
      const json = await client.request(method, path, { headers: { ...origin, accept: 'application/json' } });
      expect(json.status, `${method} ${path}`).toBe(405);
      expect(json.headers.get('allow')?.split(', ')).toEqual(expect.arrayContaining(allow.split(', ')));
      expect(json.headers.get('allow')).not.toContain(method);
      expect(await json.json()).toMatchObject({
        code: 'method_not_allowed',
        error: { code: 'method_not_allowed', type: 'invalid_request_error' },
      });
      const page = await client.request(method, path, { headers: { ...origin, accept: 'text/html' } });
      expect(page.status).toBe(405);
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      expect(await page.text()).toContain(`does not answer ${method}`);
    }
    // TRACE, which fetch will not send.
    const { request } = await import('node:http');
    const trace = (accept: string) =>
      new Promise<{ status: number; allow: string | undefined; type: string | undefined; body: string }>((resolve, reject) => {
        const req = request(`${harness.url}/`, { method: 'TRACE', headers: { accept } }, (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (body += chunk));
          res.on('end', () => resolve({ status: res.statusCode!, allow: res.headers.allow, type: res.headers['content-type'], body }));
        });
        req.on('error', reject);
        req.end();
      });
    const traced = await trace('application/json');
    expect(traced).toMatchObject({ status: 405, allow: 'GET, HEAD' });
    expect(JSON.parse(traced.body)).toMatchObject({ code: 'method_not_allowed' });
    expect(await trace('text/html')).toMatchObject({ status: 405, allow: 'GET, HEAD', type: expect.stringMatching(/^text\/html/) });
    // Paths no route has stay 404, whatever the method; so does an id no route takes.
    for (const [method, path] of [
      ['PUT', '/no-such-page'],
      ['DELETE', '/dashboard/no-such-page'],
      ['GET', '/dashboard/keys/11/nothing'],
    ] as const) {
      const res = await client.request(method, path, { headers: { ...origin, accept: 'application/json' } });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.headers.get('allow')).toBeNull();
    }
  });
});

/**
 * A portal of its own beside the harness's (its own database and store), on `port` (0: any), for
 * what the harness hides: the address it takes, the moments before it is ready.
 */
async function ownPortal(port = 0) {
  const { createTestDatabase } = await import('../../core/db/testing.js');
  const { MemoryStore } = await import('../../core/store/index.js');
  const { parsePortalSettings } = await import('../../core/config/index.js');
  const { startPortal } = await import('../../portal/src/server.js');
  const { harnessSecrets } = await import('../support/portal-harness.js');
  const database = await createTestDatabase();
  const store = new MemoryStore('t:');
  const settings = parsePortalSettings({
    ...harnessSecrets,
    SVC_CATALOG: 'unused.yaml',
    SVC_HOST: '127.0.0.1',
    PORTAL_PORT: String(port),
    SVC_METRICS_PORT: '0',
  });
  return {
    database,
    start: (db: typeof database = database) =>
      startPortal(settings, { database: db, store, catalogue: harness.portal.deps.catalogue, announce: () => {} }),
    close: async () => {
      await store.close();
      await database.close();
    },
  };
}

describe('without SVC_PORTAL_BASE_URL', () => {
  it('takes its public address from the port it bound, and accepts same-origin posts to it', async () => {
    const own = await ownPortal();
    const portal = await own.start();
    try {
      expect(portal.deps.settings.SVC_PORTAL_BASE_URL).toBe(portal.url);
      const response = await fetch(`${portal.url}/auth/forgot-password`, {
        method: 'POST',
        headers: { origin: portal.url, 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'nobody@example.com' }),
      });
      expect(response.status).toBe(202);
    } finally {
      await portal.stop();
      await own.close();
    }
  });
});

describe('while starting', () => {
  it('answers 503 with Retry-After at once (a page that reloads itself, or JSON), never an accepted connection left unanswered', async () => {
    const { freePort } = await import('../support/free-port.js');
    const port = await freePort();
    const own = await ownPortal(port);
    const { database } = own;
    // Migrations held until the test has seen the portal answer while starting.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let started = false;
    const starting = own
      .start({ ...database, migrate: () => held.then(() => database.migrate()) })
      .then((portal) => ((started = true), portal));
    try {
      const url = `http://127.0.0.1:${port}`;
      let json: Response | undefined;
      await waitFor('the port to answer', async () => {
        json = await fetch(`${url}/login`, { headers: { accept: 'application/json' } }).catch(() => undefined);
        return json !== undefined;
      });
      if (!json) throw new Error('unreachable');
      expect(started).toBe(false);
      expect(json.status).toBe(503);
      expect(json.headers.get('retry-after')).toBe('2');
      expect(await json.json()).toMatchObject({ error: { code: 'service_unavailable' } });
      const page = await fetch(`${url}/login`, { headers: { accept: 'text/html' } });
      expect(page.status).toBe(503);
      expect(await page.text()).toContain('http-equiv="refresh"');
    } finally {
      release();
      const portal = await starting;
      expect((await fetch(`${portal.url}/login`)).status).toBe(200);
      await portal.stop();
      await own.close();
    }
  });
});
