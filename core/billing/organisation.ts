// An organisation's billing (docs/billing.md "Who pays"): the nominated billing user whose wallet
// every member's requests are charged to, and where billing mail goes. Nominating or clearing the
// billing user re-points the portal keys of the organisation's members to their new effective
// payer in the same transaction, so a change is never half applied; the caller announces the
// returned key hashes so every gateway replica follows within a second.
import type { Knex } from 'knex';
import { ApiError } from '../errors/index.js';
import { projectPayerPattern } from '../projects/projects.js';
import type { Role } from '../identity/roles.js';
import { payerForPortalKey } from './payer.js';
import { creditActorMayNotGive } from './user-limits.js';

/** The organisation's billing facts as the admin pages show them. */
export interface OrganisationBilling {
  organisation_id: number;
  name: string;
  billing_user_id: number | null;
  billing_user_email: string | null;
  /**
   * Whether the billing user pays now: an active member. A suspended or archived one stays
   * nominated but pays again only once reactivated; meanwhile each member pays as if none were.
   */
  billing_user_active: boolean;
  billing_email: string | null;
  billing_exempt: boolean;
  /** Cap on the members' portal keys' spend per UTC month (USD), null when none. */
  monthly_budget: number | null;
}

/** Reads the billing facts of `organisationId`, or not_found. */
export async function organisationBilling(knex: Knex, organisationId: number): Promise<OrganisationBilling> {
  const row = (await knex('organisations as o')
    .leftJoin('users as b', 'b.id', 'o.billing_user_id')
    .where('o.id', organisationId)
    .first(
      'o.id',
      'o.name',
      'o.billing_user_id',
      'b.email as billing_user_email',
      knex.raw("coalesce(b.status = 'active' and b.organisation_id = o.id, false) as billing_user_active"),
      'o.billing_email',
      'o.billing_exempt',
      'o.monthly_budget',
    )) as
    | {
        id: number;
        name: string;
        billing_user_id: number | null;
        billing_user_email: string | null;
        billing_user_active: boolean;
        billing_email: string | null;
        billing_exempt: boolean;
        monthly_budget: string | number | null;
      }
    | undefined;
  if (!row) throw new ApiError('not_found', { humanMessage: 'There is no such organisation' });
  return {
    organisation_id: row.id,
    name: row.name,
    billing_user_id: row.billing_user_id,
    billing_user_email: row.billing_user_email,
    billing_user_active: Boolean(row.billing_user_active),
    billing_email: row.billing_email,
    billing_exempt: Boolean(row.billing_exempt),
    monthly_budget: row.monthly_budget === null ? null : Number(row.monthly_budget),
  };
}

/**
 * `nominator` nominates `userId` (an active member of the organisation) as its billing user, or
 * clears the nomination with null. A nominee whose wallet carries credit is refused when that
 * wallet would then pay for the nominator's own keys and the nominator may not give it credit
 * (mayGiveCredit, core/billing/user-limits.ts: an org admin): else an org admin could credit a
 * member, nominate her and spend the credit (outside probe). Returns the secret hashes of the
 * portal keys whose payer changed.
 */
export async function nominateBillingUser(
  knex: Knex,
  organisationId: number,
  userId: number | null,
  nominator: { id: number; role: Role },
): Promise<string[]> {
  return knex.transaction(async (trx) => {
    // The nominee's row is locked first, then the organisation's — the order a move out of the
    // organisation takes (user, then its nominations): the other order deadlocked the two (review).
    // Locked, so a suspension or move committing meanwhile is either seen here (refused) or waits
    // for this nomination and then re-points the keys it made (repointKeysPaidThrough).
    const nominee =
      userId === null
        ? undefined
        : ((await trx('users').where({ id: userId }).forUpdate().first('organisation_id', 'status')) as
            { organisation_id: number | null; status: string } | undefined);
    const organisation = await trx('organisations').where({ id: organisationId }).forUpdate().first('id');
    if (!organisation) throw new ApiError('not_found', { humanMessage: 'There is no such organisation' });
    if (userId !== null) {
      if (!nominee || nominee.organisation_id !== organisationId)
        throw new ApiError('validation_error', {
          status: 422,
          humanMessage: 'The billing user must be a member of this organisation',
          param: 'user_id',
        });
      if (nominee.status !== 'active')
        throw new ApiError('conflict', { humanMessage: 'A suspended or archived user cannot pay for the organisation' });
    }
    await trx('organisations').where({ id: organisationId }).update({ billing_user_id: userId });
    // Asked after the change, under the nominee's lock (the credit-limit route takes it too).
    if (userId !== null) {
      const credit = await creditActorMayNotGive(trx, nominator, userId);
      if (credit > 0)
        throw new ApiError('forbidden', {
          param: 'user_id',
          humanMessage: `This user's wallet has ${credit} USD of credit, and as billing user it would pay for your own keys: credit you may not give yourself. Remove their credit limit first, or ask a platform administrator to nominate them`,
        });
    }
    return repointPortalKeys(trx, { organisationId });
  });
}

/** Saves where the organisation's billing mail goes (null: to the billing user). */
export async function saveOrganisationBillingEmail(knex: Knex, organisationId: number, billingEmail: string | null): Promise<void> {
  const updated = await knex('organisations').where({ id: organisationId }).update({ billing_email: billingEmail });
  if (updated === 0) throw new ApiError('not_found', { humanMessage: 'There is no such organisation' });
}

/**
 * Re-derives the payer of every live portal key owned by the organisation's members (or by one
 * user); the hashes of those that changed, to announce. Called in the transaction of any change
 * to who pays: a billing user nominated, a user moved into an organisation, organisations merged,
 * a billing user's standing changed (repointKeysPaidThrough).
 */
export async function repointPortalKeys(trx: Knex, owners: { organisationId: number } | { userId: number }): Promise<string[]> {
  const keys = (await trx('api_keys as k')
    .join('users as u', 'u.id', 'k.owner_user_id')
    .where('userId' in owners ? { 'u.id': owners.userId } : { 'u.organisation_id': owners.organisationId })
    .andWhere('k.source', 'portal')
    .andWhereNot('k.status', 'revoked')
    // A project's tokens are paid by the project whoever issued them (docs/projects.md): they
    // follow no change of who pays for their issuer.
    .andWhereRaw("coalesce(k.metadata->>'project', '') = ''")
    .andWhereRaw("coalesce(k.payer_id, '') not like ?", [projectPayerPattern])
    .select('k.id', 'k.owner_user_id', 'k.payer_id', 'k.secret_hash')) as {
    id: string;
    owner_user_id: number;
    payer_id: string | null;
    secret_hash: string;
  }[];
  const changed: string[] = [];
  for (const key of keys) {
    const payer = await payerForPortalKey(trx, key.owner_user_id);
    if (payer === key.payer_id) continue;
    await trx('api_keys').where({ id: key.id }).update({ payer_id: payer, updated_at: trx.fn.now() });
    changed.push(key.secret_hash);
  }
  return changed;
}

/**
 * Ends the nominations of `userId` as billing user by every organisation but `keep` (the one they
 * stay in, or null); the organisations whose nomination ended, for repointKeysPaidThrough. A
 * nomination names a member: one who leaves, or whose account is deleted, no longer pays there,
 * and coming back later must not silently make them pay again.
 */
export async function endNominations(trx: Knex, userId: number, keep: number | null): Promise<number[]> {
  const ended = (await trx('organisations')
    .where({ billing_user_id: userId })
    .modify((q) => {
      if (keep !== null) void q.whereNot({ id: keep });
    })
    .pluck('id')) as number[];
  if (ended.length > 0) await trx('organisations').whereIn('id', ended).update({ billing_user_id: null });
  return ended;
}

/**
 * Re-derives the payer of every portal key whose payer follows `userId`'s standing: the user's own,
 * those of the members of every organisation that nominated them (and of `alsoOrganisations`,
 * whose nomination of them just ended), and those of the users who delegated their billing to
 * them. Called in the transaction of any change to that standing — suspended, archived, deleted,
 * reactivated, moved between organisations — because the rule counts a billing user or delegate
 * only while active (and a billing user only while a member), and a key's payer_id is what the
 * gateway debits: without this the keys would go on charging a wallet the pages no longer name,
 * or stay on the member's own wallet once the billing user is back. The hashes to announce.
 */
export async function repointKeysPaidThrough(trx: Knex, userId: number, alsoOrganisations: number[] = []): Promise<string[]> {
  const nominating = (await trx('organisations').where({ billing_user_id: userId }).pluck('id')) as number[];
  const delegators = (await trx('billing_delegations').where({ delegate_user_id: userId }).pluck('user_id')) as number[];
  const changed = await repointPortalKeys(trx, { userId });
  for (const organisationId of new Set([...nominating, ...alsoOrganisations]))
    changed.push(...(await repointPortalKeys(trx, { organisationId })));
  for (const delegator of delegators) changed.push(...(await repointPortalKeys(trx, { userId: delegator })));
  return [...new Set(changed)];
}
