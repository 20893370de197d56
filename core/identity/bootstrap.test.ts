import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../db/index.js';
import { createTestDatabase } from '../db/testing.js';
import { ensureVerifiedOwner } from './bootstrap.js';
import { verifyPassword } from './passwords.js';
import { UserRepository } from './users.js';

let database: Database;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database?.close();
});

describe('ensureVerifiedOwner', () => {
  it('creates a verified owner once and restores it on later calls', async () => {
    const now = new Date();
    const first = await ensureVerifiedOwner(
      database.knex,
      { email: 'owner@demo.local', displayName: 'Demo owner', password: 'first password 1', legalVersion: 'v1' },
      now,
    );
    expect(first).toMatchObject({ role: 'owner', status: 'active', emailVerified: true, legalVersion: 'v1' });
    const users = new UserRepository(database.knex);
    await users.setStatus(first.id, 'suspended', now);
    await users.setRole(first.id, 'member', now);
    const again = await ensureVerifiedOwner(
      database.knex,
      { email: 'OWNER@demo.local', displayName: 'Demo owner', password: 'second password 2', legalVersion: 'v2' },
      now,
    );
    expect(again).toMatchObject({ id: first.id, role: 'owner', status: 'active', legalVersion: 'v2' });
    const signIn = await users.findForSignIn('owner@demo.local');
    expect(await verifyPassword(signIn!.passwordHash, 'second password 2')).toBe(true);
  });
});
