// Who the client is, for the per-address sign-in throttle: X-Forwarded-For is believed only from
// the peers SVC_PORTAL_TRUST_PROXY names (outside probe: with loopback and private networks always
// trusted, any local or in-cluster client rotated the header and was never throttled).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PortalClient } from '../support/portal-client.js';
import { startPortalHarness, type PortalHarness } from '../support/portal-harness.js';

let harness: PortalHarness;
beforeAll(async () => {
  harness = await startPortalHarness({ settings: { SVC_PORTAL_TRUST_PROXY: 'none', SVC_LOGIN_MAX_FAILURES_PER_ADDRESS: '3' } });
});
afterAll(async () => {
  await harness?.close();
});

describe('SVC_PORTAL_TRUST_PROXY=none', () => {
  it('a client naming a new address in X-Forwarded-For on every attempt is still one client', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      const attempt = await new PortalClient(harness.url).postJson(
        '/auth/login',
        { email: `nobody${i}-${Date.now()}@example.com`, password: `wrong password ${i}x` },
        { 'x-forwarded-for': `203.0.113.${i + 1}` },
      );
      statuses.push(attempt.status);
    }
    expect(statuses).toEqual([401, 401, 401, 429, 429]);
  });
});
