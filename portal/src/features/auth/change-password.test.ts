import { expect, test } from 'vitest';
import { hashPassword } from '../../../../core/identity/index.js';
import { AccountService, type AccountDeps } from './service.js';

test('a password change is made before its email is handed to the mailer, which sends it after the answer', async () => {
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
    // sendLater never throws nor waits (mail/mailer.ts): the change cannot fail with the mail server.
    mailer: { sendLater: (message: { subject: string }, what: string) => void calls.push(`${what}: ${message.subject}`) },
    baseUrl: 'http://portal',
    clock: Date.now,
  } as unknown as AccountDeps;
  await new AccountService(deps).changePassword({
    userId: 7,
    current: 'the old password 1',
    next: 'a brand new password 2',
    keptSession: 'sid-1',
    address: '127.0.0.1',
  });
  expect(calls).toEqual(['saved', 'links voided', 'others signed out', 'password-change email: Your password was changed']);
});
