// The first administrator of a fresh installation (npm start's demo owner): an active, verified
// owner with a known password, created once. Later starts respect what happened to it since — a
// password changed in the portal, a role an administrator lowered — and step in only to recover:
// a data directory whose printed password is new (its credentials file was lost) sets it again,
// and an installation left with no active owner gets this one back as owner.
import type { Knex } from 'knex';
import { repointKeysPaidThrough } from '../billing/organisation.js';
import { hashPassword, verifyPassword } from './passwords.js';
import { UserRepository, type User } from './users.js';

/** The demo owner after a start, and whether the password the launcher prints signs in. */
export interface BootstrappedOwner {
  /** Undefined when an administrator deleted the account: it is not made again. */
  user: User | undefined;
  /** False when the owner has since chosen another password: the launcher must not print the old one as valid. */
  printedPasswordWorks: boolean;
  /** The account was brought back to an active owner, as nobody else was one. */
  restored: boolean;
  /**
   * Secret hashes of the keys whose standing the restore changed — the owner's own, served again,
   * and those re-pointed to it as their payer once more — for the caller to announce to gateways.
   */
  changedKeys: string[];
}

/**
 * Creates a verified, active `owner` with this email and password, or finds it. `setPassword`:
 * the launcher made a new password for this data directory (sets it on an existing account too).
 */
export async function ensureVerifiedOwner(
  knex: Knex,
  owner: { email: string; displayName: string; password: string; legalVersion: string },
  now: Date,
  options: { setPassword: boolean; /** The account this data directory made before, if any. */ knownId?: number } = { setPassword: true },
): Promise<BootstrappedOwner> {
  const users = new UserRepository(knex);
  const found = await users.findForSignIn(owner.email);
  if (!found && options.knownId !== undefined) {
    // Made before and gone from its address: deleted by an administrator, which a start respects.
    const earlier = (await knex('users').where({ id: options.knownId }).first('deleted_at')) as { deleted_at: Date | null } | undefined;
    if (earlier?.deleted_at) return { user: undefined, printedPasswordWorks: false, restored: false, changedKeys: [] };
  }
  if (!found) {
    const user = await users.create(
      {
        email: owner.email,
        displayName: owner.displayName,
        passwordHash: await hashPassword(owner.password),
        legalVersion: owner.legalVersion,
        emailVerified: true,
        role: 'owner',
      },
      now,
    );
    return { user, printedPasswordWorks: true, restored: false, changedKeys: [] };
  }
  const { user } = found;
  if (options.setPassword) await users.setPasswordHash(user.id, await hashPassword(owner.password), now);
  const printedPasswordWorks = options.setPassword || (await verifyPassword(found.passwordHash, owner.password));
  // With no active owner, nobody could administer the installation: this account is brought back.
  const anyOwner = await knex('users').where({ role: 'owner', status: 'active' }).first('id');
  const restored = anyOwner === undefined;
  // As an administrator's reactivation does (administration.ts, setUserStatus): the keys it pays
  // for as a billing user or delegate are re-pointed to it again, in the same transaction.
  const changedKeys = restored
    ? await knex.transaction(async (trx) => {
        await trx('users').where({ id: user.id }).update({ role: 'owner', status: 'active', updated_at: now });
        const own = (await trx('api_keys').where({ owner_user_id: user.id }).pluck('secret_hash')) as string[];
        return [...new Set([...own, ...(await repointKeysPaidThrough(trx, user.id))])];
      })
    : [];
  await users.acceptLegal(user.id, owner.legalVersion, now);
  return { user: await users.markEmailVerified(user.id, now, undefined), printedPasswordWorks, restored, changedKeys };
}
