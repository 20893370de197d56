// Promotion grants (docs/administration.md "Promotions"): credit given to a user's wallet through
// the ledger, with a reason and an optional expiry. Money moves only as ledger entries with
// unique references, so a grant credits once and is withdrawn at most once, whatever retries or
// replicas do. Spending draws on promotional credit first: when a grant ends (revoked or expired)
// what is withdrawn is its part not yet spent — the grant less the wallet's spending (requests'
// debits) since it was credited — and never more than the wallet holds.
import type { Knex } from 'knex';
import { userPayerId } from '../billing/payer.js';
import { nanoPerUsd } from '../budget/usage.js';
import { ApiError } from '../errors/index.js';
import { whereWithinScope, type UserScope } from '../identity/administration.js';
import { postReferencedEntry } from '../wallets/referenced-entries.js';

/** A grant as the admin page and API show it. */
export interface PromotionGrant {
  id: number;
  user_id: number;
  user_email: string;
  payer_id: string;
  amount_usd: number;
  reason: string;
  expires_at: string | null;
  status: 'active' | 'revoked' | 'expired';
  withdrawn_usd: number;
  created_by: number | null;
  created_at: string;
}

interface Row {
  id: string | number;
  user_id: number;
  user_email: string;
  payer_id: string;
  amount_nano: string | number;
  reason: string;
  expires_at: Date | null;
  status: PromotionGrant['status'];
  withdrawn_nano: string | number;
  credit_entry_id: string | number | null;
  created_by: number | null;
  created_at: Date;
}

const present = (row: Row): PromotionGrant => ({
  id: Number(row.id),
  user_id: row.user_id,
  user_email: row.user_email,
  payer_id: row.payer_id,
  amount_usd: Number(row.amount_nano) / nanoPerUsd,
  reason: row.reason,
  expires_at: row.expires_at ? new Date(row.expires_at).toISOString() : null,
  status: row.status,
  withdrawn_usd: Number(row.withdrawn_nano) / nanoPerUsd,
  created_by: row.created_by,
  created_at: new Date(row.created_at).toISOString(),
});

const selectGrants = (knex: Knex) =>
  knex('promotion_grants as g').join('users as u', 'u.id', 'g.user_id').select('g.*', 'u.email as user_email');

/**
 * The grants of the users within `scope` (the administrator's reach: core/identity's userScopeOf),
 * newest first, at most `limit` of them. Grants of users out of reach are left out in the query,
 * so they neither show nor take a place within the limit.
 */
export async function listGrants(knex: Knex, scope: UserScope, limit = 200): Promise<PromotionGrant[]> {
  return ((await whereWithinScope(selectGrants(knex), scope, 'u').orderBy('g.id', 'desc').limit(limit)) as Row[]).map(present);
}

/** The refusal for a grant that does not exist, or whose user is outside the caller's reach. */
export const noSuchGrant = () => new ApiError('not_found', { param: 'grant_id', humanMessage: 'There is no such promotion grant' });

/** One grant, or undefined. */
export async function findGrant(knex: Knex, id: number): Promise<PromotionGrant | undefined> {
  const row = (await selectGrants(knex).where('g.id', id).first()) as Row | undefined;
  return row ? present(row) : undefined;
}

/** What a new grant needs. */
export interface NewGrant {
  userId: number;
  amountNano: number;
  reason: string;
  expiresAt: Date | null;
  createdBy: number;
  /**
   * Makes a repeated submission create nothing new (the first grant is returned). Sent again with
   * another user, amount or administrator it is refused with 409 `conflict`: it names a grant
   * that is not this one.
   */
  nonce?: string | undefined;
}

/**
 * A nonce already used: the same request again is the first grant (undefined), another one is a
 * 409 naming what differs. The user, the amount and the administrator are compared: they never
 * change after the grant, whereas its reason and expiry may be edited since.
 */
function nonceConflict(seen: { user_id: number; amount_nano: string | number; created_by: number | null }, grant: NewGrant) {
  const differs = [
    ...(Number(seen.user_id) !== grant.userId ? ['user'] : []),
    ...(Number(seen.amount_nano) !== grant.amountNano ? ['amount'] : []),
    ...(seen.created_by !== null && Number(seen.created_by) !== grant.createdBy ? ['administrator'] : []),
  ];
  if (differs.length === 0) return undefined;
  return new ApiError('conflict', {
    param: 'nonce',
    humanMessage: `This nonce was already used for a grant with another ${differs.join(' and ')}; nothing was granted. Send a new nonce (reload the form) for a new grant`,
  });
}

/** PostgreSQL's unique_violation: two submissions with one nonce raced, and the other one inserted it. */
const isUniqueViolation = (error: unknown) => (error as { code?: unknown } | null)?.code === '23505';

/**
 * Creates a grant and credits the user's wallet in one transaction. Returns the grant and the
 * ledger entry ids to apply to the store mirror (none when the nonce was seen before).
 */
export async function createGrant(knex: Knex, grant: NewGrant, now: Date): Promise<{ grant: PromotionGrant; entryIds: number[] }> {
  if (grant.expiresAt && grant.expiresAt.getTime() <= now.getTime())
    throw new ApiError('validation_error', { status: 422, param: 'expires_at', humanMessage: 'The expiry must be in the future' });
  const attempt = () =>
    knex.transaction(async (trx) => {
      if (grant.nonce) {
        const seen = (await trx('promotion_grants').where({ nonce: grant.nonce }).first('id', 'user_id', 'amount_nano', 'created_by')) as
          { id: string | number; user_id: number; amount_nano: string | number; created_by: number | null } | undefined;
        if (seen) {
          const conflict = nonceConflict(seen, grant);
          if (conflict) throw conflict;
          return { id: Number(seen.id), entryIds: [] as number[] };
        }
      }
      const user = (await trx('users').where({ id: grant.userId }).whereNull('deleted_at').first('id', 'status')) as
        { id: number; status: string } | undefined;
      if (!user) throw new ApiError('not_found', { param: 'user_id', humanMessage: 'There is no such user' });
      const payerId = userPayerId(grant.userId);
      const [row] = (await trx('promotion_grants')
        .insert({
          user_id: grant.userId,
          payer_id: payerId,
          amount_nano: grant.amountNano,
          reason: grant.reason,
          expires_at: grant.expiresAt,
          nonce: grant.nonce ?? null,
          created_by: grant.createdBy,
          created_at: now,
          updated_at: now,
        })
        .returning('id')) as { id: string | number }[];
      const id = Number(row!.id);
      const entryId = await postReferencedEntry(trx, {
        payerId,
        amountNano: grant.amountNano,
        reason: `Promotion: ${grant.reason}`,
        reference: `promotion:${id}`,
        actor: userPayerId(grant.createdBy),
      });
      await trx('promotion_grants')
        .where({ id })
        .update({ credit_entry_id: entryId ?? null });
      return { id, entryIds: entryId === undefined ? [] : [entryId] };
    });
  let result;
  try {
    result = await attempt();
  } catch (error) {
    // The same nonce inserted by a concurrent submission: looked up again, it is that grant (or a 409).
    if (!grant.nonce || !isUniqueViolation(error)) throw error;
    result = await attempt();
  }
  return { grant: (await findGrant(knex, result.id))!, entryIds: result.entryIds };
}

/**
 * Ends an active grant (`revoked` by an administrator, or `expired`): withdraws its unspent part
 * with the reference `promotion:<id>:withdrawal`. Returns the ledger entry ids to mirror.
 */
async function endGrant(trx: Knex.Transaction, id: number, status: 'revoked' | 'expired', now: Date): Promise<number[]> {
  const grant = (await trx('promotion_grants').where({ id }).forUpdate().first()) as Row | undefined;
  if (!grant || grant.status !== 'active') return [];
  const spentSince = (await trx('wallet_entries')
    .where({ payer_id: grant.payer_id })
    .andWhere('id', '>', grant.credit_entry_id ?? 0)
    .andWhere('kind', 'debit')
    // Spending only: requests' debits carry no reference. A refund's reversal, a dispute's hold
    // and another grant's withdrawal do (payments and promotions: `refund:`, `dispute:`,
    // `promotion:`) — money leaving as it came, not promotional credit spent (outside probe: a
    // refunded top-up counted as spending the grant, and its revocation left the user money).
    .whereNull('reference')
    .sum({ n: trx.raw('coalesce(amount_nano, amount_micro * 1000)') })
    .first()) as { n: string | number | null } | undefined;
  const balance = (await trx('wallet_entries')
    .where({ payer_id: grant.payer_id })
    .sum({ n: trx.raw('coalesce(amount_nano, amount_micro * 1000)') })
    .first()) as { n: string | number | null } | undefined;
  const unspent = Math.max(0, Number(grant.amount_nano) + Number(spentSince?.n ?? 0)); // debits are negative
  const withdraw = Math.min(unspent, Math.max(0, Number(balance?.n ?? 0)));
  const entryId =
    withdraw > 0
      ? await postReferencedEntry(trx, {
          payerId: grant.payer_id,
          amountNano: -withdraw,
          reason: `Promotion ${status}: ${grant.reason}`,
          reference: `promotion:${id}:withdrawal`,
          actor: 'system:promotions',
        })
      : undefined;
  await trx('promotion_grants')
    .where({ id })
    .update({ status, withdrawn_nano: entryId === undefined ? 0 : withdraw, updated_at: now });
  return entryId === undefined ? [] : [entryId];
}

/** Changes a grant: its reason, its expiry (null: never), or revokes it. Entry ids to mirror. */
export async function updateGrant(
  knex: Knex,
  id: number,
  change: { reason?: string | undefined; expiresAt?: Date | null | undefined; revoke?: boolean | undefined },
  now: Date,
): Promise<number[]> {
  if (change.expiresAt && change.expiresAt.getTime() <= now.getTime())
    throw new ApiError('validation_error', { status: 422, param: 'expires_at', humanMessage: 'The expiry must be in the future' });
  return knex.transaction(async (trx) => {
    const grant = (await trx('promotion_grants').where({ id }).forUpdate().first('status')) as { status: string } | undefined;
    if (!grant) throw noSuchGrant();
    if (grant.status !== 'active')
      throw new ApiError('conflict', { humanMessage: `This grant is ${grant.status}; it can no longer change` });
    const fields = {
      ...(change.reason !== undefined && { reason: change.reason }),
      ...(change.expiresAt !== undefined && { expires_at: change.expiresAt }),
    };
    if (Object.keys(fields).length > 0)
      await trx('promotion_grants')
        .where({ id })
        .update({ ...fields, updated_at: now });
    return change.revoke ? endGrant(trx, id, 'revoked', now) : [];
  });
}

/**
 * Ends every active grant past its expiry. Any replica may run it at any time: each grant is
 * locked, re-checked as still active, and its withdrawal's reference is unique, so a grant is
 * ended once. Entry ids to mirror.
 */
export async function expireDueGrants(knex: Knex, now: Date, limit = 100): Promise<number[]> {
  const due = (await knex('promotion_grants')
    .where({ status: 'active' })
    .andWhere('expires_at', '<=', now)
    .orderBy('expires_at')
    .limit(limit)
    .pluck('id')) as (string | number)[];
  const entryIds: number[] = [];
  for (const id of due) entryIds.push(...(await knex.transaction((trx) => endGrant(trx, Number(id), 'expired', now))));
  return entryIds;
}
