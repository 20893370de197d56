import { describe, expect, it } from 'vitest';
import { issuerAllowed } from './oidc.js';

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
