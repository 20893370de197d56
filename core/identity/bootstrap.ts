// The first administrator of a fresh installation (npm start's demo owner): an active, verified
// owner with a known password, created once and brought back to that state on each start.
import type { Knex } from 'knex';
import { hashPassword } from './passwords.js';
import { UserRepository, type User } from './users.js';

/** Creates (or restores) a verified, active `owner` with this email and password. */
export async function ensureVerifiedOwner(
  knex: Knex,
  owner: { email: string; displayName: string; password: string; legalVersion: string },
  now: Date,
): Promise<User> {
  const users = new UserRepository(knex);
  const passwordHash = await hashPassword(owner.password);
  const existing = await users.findByEmail(owner.email);
  if (!existing) {
    return users.create(
      {
        email: owner.email,
        displayName: owner.displayName,
        passwordHash,
        legalVersion: owner.legalVersion,
        emailVerified: true,
        role: 'owner',
      },
      now,
    );
  }
  await users.setPasswordHash(existing.id, passwordHash, now);
  await users.setRole(existing.id, 'owner', now);
  await users.setStatus(existing.id, 'active', now);
  await users.acceptLegal(existing.id, owner.legalVersion, now);
  return users.markEmailVerified(existing.id, now, undefined);
}
