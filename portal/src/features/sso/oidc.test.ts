import { describe, expect, it } from 'vitest';
import * as oidc from 'openid-client';
import { callbackFailure, issuerAllowed } from './oidc.js';

describe('issuerAllowed', () => {
  it('accepts https anywhere and http only on loopback', () => {
    expect(issuerAllowed(new URL('https://login.example.com'))).toBe(true);
    expect(issuerAllowed(new URL('http://127.0.0.1:4000'))).toBe(true);
    expect(issuerAllowed(new URL('http://localhost:4000/oidc'))).toBe(true);
    expect(issuerAllowed(new URL('http://[::1]:4000'))).toBe(true);
    expect(issuerAllowed(new URL('http://login.example.com'))).toBe(false);
    expect(issuerAllowed(new URL('http://10.0.0.1'))).toBe(false);
  });
});

describe('callbackFailure', () => {
  const refusal = (error: string) => new oidc.AuthorizationResponseError('authorization error', { cause: new URLSearchParams({ error }) });

  it('tells a cancelled sign-in from a refused one, an unreachable provider and an answer that does not verify', () => {
    expect(callbackFailure(refusal('access_denied'))).toMatchObject({
      code: 'invalid_token',
      humanMessage: expect.stringContaining('cancelled'),
    });
    expect(callbackFailure(refusal('temporarily_unavailable')).humanMessage).toContain('refused the sign-in (temporarily_unavailable)');
    // The token endpoint down (fetch failed) or failing (5xx): try again shortly.
    const refused = new TypeError('fetch failed', { cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) });
    expect(callbackFailure(refused)).toMatchObject({ code: 'provider_unavailable', status: 503 });
    // A TypeError of the library's own (a malformed token's base64url) is no outage.
    expect(callbackFailure(Object.assign(new TypeError('The "input" argument must be …'), { code: 'ERR_INVALID_ARG_TYPE' })).code).toBe(
      'invalid_token',
    );
    const failing = Object.assign(new oidc.ClientError('unexpected HTTP response status code'), {
      cause: new Response('', { status: 502 }),
    });
    expect(callbackFailure(failing).code).toBe('provider_unavailable');
    // A bad signature or nonce is the answer's fault, not the provider's availability.
    expect(callbackFailure(new oidc.ClientError('unexpected JWT claim value encountered')).code).toBe('invalid_token');
  });
});
