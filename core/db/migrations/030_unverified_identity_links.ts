import type { Knex } from 'knex';

/**
 * Identity-provider links of accounts whose address was never verified are dropped. Before this
 * version an SSO sign-in whose provider did not vouch for the address could create an account and
 * link its own subject to it; such a link kept signing its holder in after the address's owner
 * reset the password (an account takeover an outside probe showed). Links are now made only on a
 * verified address; the ones made before are removed (their holders sign in again through a
 * provider that vouches for the address, or reset the password by email).
 */
export async function up(knex: Knex): Promise<void> {
  await knex('user_identities').whereIn('user_id', knex('users').whereNull('email_verified_at').select('id')).delete();
}

export async function down(): Promise<void> {
  // Removed links are not restored.
}
