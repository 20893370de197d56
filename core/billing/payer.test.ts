import { describe, expect, it } from 'vitest';
import { effectivePayer, payerUserId, userPayerId } from './payer.js';

describe('the effective payer rule', () => {
  const base = { callerUserId: 7, organisationBillingUserId: null, delegateUserId: null };

  it('takes the project, then the organisation billing user, then the delegate, then the caller', () => {
    const all = { ...base, projectPayerId: 'project:42', organisationBillingUserId: 3, delegateUserId: 5 };
    expect(effectivePayer(all)).toEqual({ payerId: 'project:42', source: 'project', userId: null });
    expect(effectivePayer({ ...all, projectPayerId: null })).toEqual({ payerId: 'user:3', source: 'organisation_billing_user', userId: 3 });
    expect(effectivePayer({ ...base, delegateUserId: 5 })).toEqual({ payerId: 'user:5', source: 'delegated_user', userId: 5 });
    expect(effectivePayer(base)).toEqual({ payerId: 'user:7', source: 'caller', userId: 7 });
  });

  it('reads a user wallet id back, and nothing else', () => {
    expect(payerUserId(userPayerId(12))).toBe(12);
    for (const other of ['project:12', 'user:', 'user:0', 'user:012', 'user:1x', 'user:12345678901234567'])
      expect(payerUserId(other), other).toBeUndefined();
  });

  it('only ids the users table can hold: a look-up past its integer range would fail in PostgreSQL', () => {
    expect(payerUserId('user:2147483647')).toBe(2_147_483_647);
    expect(payerUserId('user:2147483648')).toBeUndefined();
    expect(payerUserId('user:9999999999')).toBeUndefined();
  });
});
