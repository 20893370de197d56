import { expect, test } from 'vitest';
import { hashPassword } from '../../../../core/identity/index.js';
import { AccountService, type AccountDeps } from './service.js';

test('a password change that is made is answered as made, even when its email cannot be sent', async () => {
  const user = { id: 7, email: 'pia@example.com', displayName: 'Pia', hasPassword: true };
  const calls: string[] = [];
  const deps = {
    users: {
      findById: async () => user,
      findForSignIn: async () => ({ user, passwordHash: await hashPassword('the old password 1') }),
      setPasswordHash: async () => void calls.push('saved'),
    },
    tokens: { revokeUnused: async () => void calls.push('links voided') },
    sessions: { destroyOthersForUser: async () => void calls.push('others signed out') },
    throttle: { begin: async () => undefined, succeeded: async () => undefined },
    mailer: {
      send: async () => {
        throw new Error('SMTP 421 service not available');
      },
    },
    baseUrl: 'http://portal',
    clock: Date.now,
  } as unknown as AccountDeps;
  const outcome = await new AccountService(deps).changePassword({
    userId: 7,
    current: 'the old password 1',
    next: 'a brand new password 2',
    keptSession: 'sid-1',
    address: '127.0.0.1',
  });
  expect(calls).toEqual(['saved', 'links voided', 'others signed out']);
  expect(outcome).toMatchObject({ notified: false });
  expect(String((outcome as { cause: unknown }).cause)).toContain('SMTP 421');
});
