// Identity repositories against a real migrated database (PostgreSQL or PGlite).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../db/index.js';
import { createTestDatabase } from '../db/testing.js';
import { EmailTakenError, InviteRepository, OneTimeTokens, OrganisationRepository, SessionRepository, UserRepository } from './index.js';

const pepper = 'pepper-for-identity-tests-0123456789abcdef';
let database: Database;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database?.close();
});
const now = new Date('2026-03-01T12:00:00Z');
const later = (ms: number) => new Date(now.getTime() + ms);

describe('UserRepository', () => {
  it('keeps emails unique whatever their case and finds them in any case', async () => {
    const users = new UserRepository(database.knex);
    const ana = await users.create({ email: 'Ana@Example.com', displayName: 'Ana', passwordHash: 'h', legalVersion: '1' }, now);
    expect(ana).toMatchObject({ email: 'Ana@Example.com', role: 'member', status: 'active', emailVerified: false, hasPassword: true });
    await expect(
      users.create({ email: 'ana@example.COM', displayName: 'Other', passwordHash: null, legalVersion: null }, now),
    ).rejects.toBeInstanceOf(EmailTakenError);
    expect((await users.findByEmail('ANA@example.com'))?.id).toBe(ana.id);
  });

  it('makes the owner address owner when it is verified, and nobody else', async () => {
    const users = new UserRepository(database.knex);
    const owner = await users.create({ email: 'boss@example.com', displayName: 'Boss', passwordHash: 'h', legalVersion: '1' }, now);
    const other = await users.create({ email: 'staff@example.com', displayName: 'Staff', passwordHash: 'h', legalVersion: '1' }, now);
    expect((await users.markEmailVerified(owner.id, now, 'BOSS@example.com')).role).toBe('owner');
    expect(await users.markEmailVerified(other.id, now, 'boss@example.com')).toMatchObject({ role: 'member', emailVerified: true });
  });

  it('ends every session of a user who is suspended', async () => {
    const users = new UserRepository(database.knex);
    const sessions = new SessionRepository(database.knex);
    const u = await users.create({ email: 'sus@example.com', displayName: 'S', passwordHash: 'h', legalVersion: '1' }, now);
    await sessions.save('sid-1', u.id, { userId: u.id }, later(60_000), now);
    await sessions.save('sid-2', u.id, { userId: u.id }, later(60_000), now);
    await users.setStatus(u.id, 'suspended', now);
    expect(await sessions.get('sid-1', now)).toBeUndefined();
    expect(await sessions.get('sid-2', now)).toBeUndefined();
    expect((await users.findById(u.id))?.status).toBe('suspended');
  });

  it('links identity-provider subjects to a user', async () => {
    const users = new UserRepository(database.knex);
    const u = await users.create({ email: 'sso@example.com', displayName: 'S', passwordHash: null, legalVersion: '1' }, now);
    await users.linkIdentity(u.id, 'sso-a', 'subject-1', now);
    await users.linkIdentity(u.id, 'sso-a', 'subject-1', now);
    expect((await users.findByIdentity('sso-a', 'subject-1'))?.id).toBe(u.id);
    expect(await users.findByIdentity('sso-b', 'subject-1')).toBeUndefined();
  });
});

describe('OneTimeTokens', () => {
  it('stores only a hash, works once, for its purpose, before it expires', async () => {
    const tokens = new OneTimeTokens(database.knex, pepper);
    const users = new UserRepository(database.knex);
    const u = await users.create({ email: 'tok@example.com', displayName: 'T', passwordHash: 'h', legalVersion: '1' }, now);
    const secret = await tokens.mint('reset_password', u.id, now, { why: 'test' });
    expect(JSON.stringify(await database.knex('one_time_tokens').select('*'))).not.toContain(secret);
    expect(await tokens.consume('verify_email', secret, now)).toBeUndefined();
    expect(await tokens.consume('reset_password', secret, now)).toEqual({ userId: u.id, payload: { why: 'test' } });
    expect(await tokens.consume('reset_password', secret, now)).toBeUndefined();

    const expiring = await tokens.mint('reset_password', u.id, now);
    expect(await tokens.consume('reset_password', expiring, later(30 * 60_000))).toBeUndefined();
    expect(await tokens.consume('reset_password', 'not-a-token', now)).toBeUndefined();
  });

  it('lets only one of two racing consumers use a token', async () => {
    const tokens = new OneTimeTokens(database.knex, pepper);
    const secret = await tokens.mint('sso_handoff', null, now);
    const results = await Promise.all([tokens.consume('sso_handoff', secret, now), tokens.consume('sso_handoff', secret, now)]);
    expect(results.filter(Boolean)).toHaveLength(1);
  });
});

describe('InviteRepository', () => {
  it('finds an invite by its link, reports expiry and revocation', async () => {
    const orgs = new OrganisationRepository(database.knex);
    const invites = new InviteRepository(database.knex, pepper);
    const org = await orgs.create('Acme', 'acme', now);
    const { id, secret } = await invites.create({ email: 'new@example.com', organisationId: org.id, role: 'member', invitedBy: null }, now);
    expect(await invites.findBySecret(secret, now)).toMatchObject({
      organisationName: 'Acme',
      status: 'pending',
      email: 'new@example.com',
    });
    expect((await invites.findBySecret(secret, later(8 * 24 * 3_600_000)))?.status).toBe('expired');
    expect(await invites.revoke(id)).toBe(true);
    expect(await invites.revoke(id)).toBe(false);
    expect((await invites.findBySecret(secret, now))?.status).toBe('revoked');
  });
});
