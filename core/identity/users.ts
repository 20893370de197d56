// Users in PostgreSQL. Emails are compared case-insensitively (unique index on lower(email)),
// stored as given. Only this file reads or writes the users and user_identities tables.
import type { Knex } from 'knex';
import type { Role, UserStatus } from './roles.js';

/** A user as the portal sees it (never the password hash outside this file's callers that ask). */
export interface User {
  id: number;
  email: string;
  displayName: string;
  status: UserStatus;
  role: Role;
  organisationId: number | null;
  departmentId: number | null;
  language: string;
  legalVersion: string | null;
  emailVerified: boolean;
  hasPassword: boolean;
}

interface UserRow {
  id: number;
  email: string;
  display_name: string;
  password_hash: string | null;
  status: UserStatus;
  role: Role;
  organisation_id: number | null;
  department_id: number | null;
  language: string;
  legal_version: string | null;
  email_verified_at: Date | null;
}

function toUser(row: UserRow): User {
  return {
    id: row.id,
    email: row.email,
    displayName: row.display_name,
    status: row.status,
    role: row.role,
    organisationId: row.organisation_id,
    departmentId: row.department_id,
    language: row.language,
    legalVersion: row.legal_version,
    emailVerified: row.email_verified_at !== null,
    hasPassword: row.password_hash !== null,
  };
}

/** Fields of a new user. */
export interface NewUser {
  email: string;
  displayName: string;
  passwordHash: string | null;
  legalVersion: string | null;
  emailVerified?: boolean;
  role?: Role;
  organisationId?: number | null;
  departmentId?: number | null;
  language?: string;
}

/** Thrown by create when the email is already registered (any case). */
export class EmailTakenError extends Error {
  constructor() {
    super('email already registered');
    this.name = 'EmailTakenError';
  }
}

/** Users, their passwords and their linked identity-provider accounts. */
export class UserRepository {
  constructor(private readonly knex: Knex) {}

  /** Creates a user; EmailTakenError when the address exists in any case. */
  async create(user: NewUser, now: Date): Promise<User> {
    try {
      const [row] = await this.knex<UserRow>('users')
        .insert({
          email: user.email.trim(),
          display_name: user.displayName,
          password_hash: user.passwordHash,
          role: user.role ?? 'member',
          organisation_id: user.organisationId ?? null,
          department_id: user.departmentId ?? null,
          language: user.language ?? 'en',
          legal_version: user.legalVersion,
          legal_accepted_at: user.legalVersion ? now : null,
          email_verified_at: user.emailVerified ? now : null,
          created_at: now,
          updated_at: now,
        } as never)
        .returning('*');
      return toUser(row as UserRow);
    } catch (error) {
      if ((error as { code?: string }).code === '23505') throw new EmailTakenError();
      throw error;
    }
  }

  /** The user with this id. */
  async findById(id: number): Promise<User | undefined> {
    const row = await this.knex<UserRow>('users').where({ id }).first();
    return row ? toUser(row) : undefined;
  }

  /** The user with this email (any case), with the password hash for sign-in. */
  async findForSignIn(email: string): Promise<{ user: User; passwordHash: string | null } | undefined> {
    const row = await this.knex<UserRow>('users').whereRaw('lower(email) = lower(?)', [email.trim()]).first();
    return row ? { user: toUser(row), passwordHash: row.password_hash } : undefined;
  }

  /** The user with this email (any case). */
  async findByEmail(email: string): Promise<User | undefined> {
    return (await this.findForSignIn(email))?.user;
  }

  /** Marks the email verified; the owner address also becomes `owner` at that moment. */
  async markEmailVerified(id: number, now: Date, ownerEmail: string | undefined): Promise<User> {
    const [row] = await this.knex<UserRow>('users')
      .where({ id })
      .update({
        email_verified_at: this.knex.raw('coalesce(email_verified_at, ?)', [now]),
        updated_at: now,
        ...(ownerEmail ? { role: this.knex.raw("case when lower(email) = lower(?) then 'owner' else role end", [ownerEmail]) } : {}),
      } as never)
      .returning('*');
    return toUser(row as UserRow);
  }

  /**
   * An identity provider vouched for the address of an account whose address was never verified.
   * Whoever signed that account up with a password need not own the address (anyone can register
   * another's address first, then wait for its owner to sign in with SSO), so the password, the
   * account's sessions, its unused emailed links and its provider links end here, and the address
   * counts as verified.
   * Nothing changes for an account already verified.
   */
  async claimUnverifiedForProvider(id: number, now: Date, displayName: string): Promise<void> {
    await this.knex.transaction(async (trx) => {
      const claimed = await trx('users')
        .where({ id })
        .whereNull('email_verified_at')
        // The name shown is the provider's for its person, not the one whoever signed up chose.
        .update({ password_hash: null, email_verified_at: now, display_name: displayName, updated_at: now });
      if (claimed === 0) return;
      await trx('portal_sessions').where({ user_id: id }).delete();
      await trx('one_time_tokens').where({ user_id: id }).whereNull('used_at').update({ used_at: now });
      // A provider link made while the address was unverified is as doubtful as the password.
      await trx('user_identities').where({ user_id: id }).delete();
    });
  }

  /**
   * Provider links of an account whose address is not verified yet: a reset by email proves the
   * address, and links made before it are someone's unproven claim on the account (none are made
   * now; accounts from before that rule may have them).
   */
  async dropUnverifiedLinks(id: number): Promise<void> {
    await this.knex('user_identities')
      .whereIn('user_id', this.knex('users').where({ id }).whereNull('email_verified_at').select('id'))
      .delete();
  }

  /** Replaces the password hash. */
  async setPasswordHash(id: number, passwordHash: string, now: Date): Promise<void> {
    await this.knex('users').where({ id }).update({ password_hash: passwordHash, updated_at: now });
  }

  /** Records acceptance of a legal version. */
  async acceptLegal(id: number, version: string, now: Date): Promise<void> {
    await this.knex('users').where({ id }).update({ legal_version: version, legal_accepted_at: now, updated_at: now });
  }

  /** Changes the name shown for the user. */
  async setDisplayName(id: number, displayName: string, now: Date): Promise<void> {
    await this.knex('users').where({ id }).update({ display_name: displayName, updated_at: now });
  }

  /** The user's dashboard display settings (a JSON object of free properties). */
  async displaySettings(id: number): Promise<Record<string, unknown>> {
    const row = (await this.knex('users').where({ id }).first('display_settings')) as
      { display_settings: Record<string, unknown> } | undefined;
    return row?.display_settings ?? {};
  }

  /** Replaces the display settings with `settings`, stored as given. */
  async setDisplaySettings(id: number, settings: Record<string, unknown>, now: Date): Promise<void> {
    await this.knex('users')
      .where({ id })
      .update({ display_settings: JSON.stringify(settings), updated_at: now });
  }

  /** Stores the preferred language. */
  async setLanguage(id: number, language: string, now: Date): Promise<void> {
    await this.knex('users').where({ id }).update({ language, updated_at: now });
  }

  /** Changes the role. */
  async setRole(id: number, role: Role, now: Date): Promise<void> {
    await this.knex('users').where({ id }).update({ role, updated_at: now });
  }

  /**
   * Changes the status; leaving `active` ends every session of the user in the same transaction,
   * so a suspended account is signed out everywhere at once.
   */
  async setStatus(id: number, status: UserStatus, now: Date): Promise<void> {
    await this.knex.transaction(async (trx) => {
      await trx('users').where({ id }).update({ status, updated_at: now });
      if (status !== 'active') await trx('portal_sessions').where({ user_id: id }).delete();
    });
  }

  /** The user linked to an identity provider's subject. */
  async findByIdentity(provider: string, subject: string): Promise<User | undefined> {
    const row = await this.knex<UserRow>('users')
      .join('user_identities', 'users.id', 'user_identities.user_id')
      .where({ provider, subject })
      .select('users.*')
      .first();
    return row ? toUser(row) : undefined;
  }

  /** The identity providers linked to a user, oldest first. */
  async identitiesOf(userId: number): Promise<{ provider: string; linkedAt: string }[]> {
    const rows = (await this.knex('user_identities').where({ user_id: userId }).orderBy('created_at').select('provider', 'created_at')) as {
      provider: string;
      created_at: Date;
    }[];
    return rows.map((r) => ({ provider: r.provider, linkedAt: new Date(r.created_at).toISOString() }));
  }

  /**
   * Removes a provider's link from a user, unless it is the account's only way in (no password, no
   * other link): `last` then, and nothing changes. The user's row is locked for the check, so two
   * removals at once cannot each leave the other as the only way in and so leave none.
   */
  async unlinkIdentity(userId: number, provider: string): Promise<'removed' | 'absent' | 'last'> {
    return this.knex.transaction(async (trx) => {
      const user = (await trx('users').where({ id: userId }).forUpdate().first('password_hash')) as
        { password_hash: string | null } | undefined;
      const links = (await trx('user_identities').where({ user_id: userId }).pluck('provider')) as string[];
      if (!user || !links.includes(provider)) return 'absent';
      // Counted by provider: two subjects of one provider are still one way in.
      if (user.password_hash === null && new Set(links).size === 1) return 'last';
      await trx('user_identities').where({ user_id: userId, provider }).delete();
      // Refused from now on: else the provider would link itself again at its next sign-in.
      await trx('user_identity_refusals')
        .insert({ user_id: userId, provider, created_at: new Date() })
        .onConflict(['user_id', 'provider'])
        .ignore();
      return 'removed';
    });
  }

  /** The identity providers this user removed and has not allowed again (they link by address no more). */
  async refusedProviders(userId: number): Promise<string[]> {
    return (await this.knex('user_identity_refusals').where({ user_id: userId }).orderBy('created_at').pluck('provider')) as string[];
  }

  /** Lets a removed provider link itself to this user again (at its next sign-in by the same address). */
  async allowProvider(userId: number, provider: string): Promise<boolean> {
    return (await this.knex('user_identity_refusals').where({ user_id: userId, provider }).delete()) > 0;
  }

  /** Links an identity provider's subject to a user (idempotent). */
  async linkIdentity(userId: number, provider: string, subject: string, now: Date): Promise<void> {
    await this.knex('user_identities')
      .insert({ user_id: userId, provider, subject, created_at: now })
      .onConflict(['provider', 'subject'])
      .ignore();
  }
}
