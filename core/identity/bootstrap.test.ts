import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../db/index.js';
import { createTestDatabase } from '../db/testing.js';
import { repointKeysPaidThrough } from '../billing/organisation.js';
import { KeyRepository } from '../keys/index.js';
import { ensureVerifiedOwner } from './bootstrap.js';
import { hashPassword, verifyPassword } from './passwords.js';
import { UserRepository } from './users.js';

let database: Database;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database?.close();
});

const demo = (password: string, legalVersion = 'v1') => ({ email: 'owner@demo.local', displayName: 'Demo owner', password, legalVersion });

describe('ensureVerifiedOwner', () => {
  it('creates a verified owner once; later starts keep a password and role changed since, and recover only what must be', async () => {
    const now = new Date();
    const users = new UserRepository(database.knex);
    const first = await ensureVerifiedOwner(database.knex, demo('first password 1'), now);
    expect(first.user).toMatchObject({ role: 'owner', status: 'active', emailVerified: true, legalVersion: 'v1' });
    expect(first.printedPasswordWorks).toBe(true);

    // The owner changed the password in the portal: a restart keeps it, and says the printed one no longer works.
    await users.setPasswordHash(first.user!.id, await hashPassword('chosen password 3'), now);
    const kept = await ensureVerifiedOwner(database.knex, demo('first password 1', 'v2'), now, { setPassword: false });
    expect(kept).toMatchObject({ printedPasswordWorks: false, restored: false });
    expect(await verifyPassword((await users.findForSignIn('owner@demo.local'))!.passwordHash, 'chosen password 3')).toBe(true);

    // A lost credentials file (a new printed password) sets it again.
    const reset = await ensureVerifiedOwner(database.knex, demo('second password 2'), now, { setPassword: true });
    expect(reset.printedPasswordWorks).toBe(true);
    expect(await verifyPassword((await users.findForSignIn('OWNER@demo.local'))!.passwordHash, 'second password 2')).toBe(true);

    // Demoted while another owner exists: left as it is.
    const other = await users.create(
      { email: 'other@demo.local', displayName: 'Other', passwordHash: null, legalVersion: 'v1', emailVerified: true, role: 'owner' },
      now,
    );
    await users.setRole(first.user!.id, 'member', now);
    expect((await ensureVerifiedOwner(database.knex, demo('second password 2'), now, { setPassword: false })).user?.role).toBe('member');

    // No active owner left anywhere: this account is brought back, so someone can administer.
    await users.setStatus(other.id, 'suspended', now);
    await users.setStatus(first.user!.id, 'suspended', now);
    const recovered = await ensureVerifiedOwner(database.knex, demo('second password 2'), now, { setPassword: false });
    expect(recovered).toMatchObject({ restored: true, user: { role: 'owner', status: 'active' } });
  });

  it("a restored owner that is its organisation's billing user pays for the members' keys again, announced", async () => {
    const now = new Date();
    const knex = database.knex;
    const made = await ensureVerifiedOwner(knex, { ...demo('a password 8'), email: 'payer@demo.local' }, now);
    const ownerId = made.user!.id;
    const [organisation] = (await knex('organisations')
      .insert({ name: 'Paid by the owner', slug: `paid-${Date.now()}`, billing_user_id: ownerId })
      .returning('id')) as { id: number }[];
    const [member] = (await knex('users')
      .insert({ email: `member-${Date.now()}@example.com`, display_name: 'Member', organisation_id: organisation!.id })
      .returning('id')) as { id: number }[];
    await knex('users').where({ id: ownerId }).update({ organisation_id: organisation!.id });
    const keys = new KeyRepository(knex, 'a-pepper-long-enough-for-the-repository');
    const key = (
      await keys.create({
        kind: 'managed',
        name: 'member key',
        source: 'portal',
        ownerUserId: member!.id,
        organisationId: organisation!.id,
        payerId: `user:${ownerId}`,
      })
    ).record;
    // Every owner suspended as an administrator would: the member's key falls back to their own wallet.
    await knex.transaction(async (trx) => {
      await trx('users').where({ role: 'owner' }).update({ status: 'suspended' });
      await repointKeysPaidThrough(trx, ownerId);
    });
    expect((await keys.findById(key.id))?.payerId).toBe(`user:${member!.id}`);
    const restored = await ensureVerifiedOwner(knex, { ...demo('a password 8'), email: 'payer@demo.local' }, now, { setPassword: false });
    expect(restored).toMatchObject({ restored: true, user: { status: 'active', role: 'owner' } });
    expect((await keys.findById(key.id))?.payerId).toBe(`user:${ownerId}`);
    expect(restored.changedKeys).toContain(key.secretHash);
  });

  it('does not make the demo owner again once an administrator deleted it', async () => {
    const now = new Date();
    const made = await ensureVerifiedOwner(database.knex, { ...demo('a password 7'), email: 'gone@demo.local' }, now);
    // A hard delete frees the address and keeps a tombstone (core/identity/administration.ts).
    await database
      .knex('users')
      .where({ id: made.user!.id })
      .update({ email: `deleted-${made.user!.id}@invalid`, deleted_at: now });
    const again = await ensureVerifiedOwner(database.knex, { ...demo('a password 7'), email: 'gone@demo.local' }, now, {
      setPassword: false,
      knownId: made.user!.id,
    });
    expect(again.user).toBeUndefined();
    expect(await new UserRepository(database.knex).findByEmail('gone@demo.local')).toBeUndefined();
  });
});
