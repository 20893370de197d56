// Spending limits administrators set on one user (docs/administration.md "User billing"):
// - the credit limit: how far below zero the user's own wallet may go (read by the gateways with
//   each key the wallet pays for, so the keys are announced on change);
// - the monthly budget: a cap on what the keys the user created spend together in a UTC month,
//   whoever pays (a spend group, core/budget/spend-groups.ts, published to the store at once);
// - the billing configuration: one "authorised spending limit" applied as whichever of the two
//   means something in the user's billing mode (see `billingModeOf`).
import type { Knex } from 'knex';
import { republishSpendGroupCap } from '../budget/spend-groups.js';
import type { Store } from '../store/index.js';
import { roleAtLeast, type Role } from '../identity/roles.js';
import { resolveEffectivePayer, userPayerId } from './payer.js';

/**
 * How a user's requests are paid, and so what an authorised spending limit means for them:
 * - `exempt` (the user or their organisation is billing-exempt): no wallet bounds them, the
 *   limit is their monthly budget;
 * - `own_wallet` (they pay for themselves): the wallet's balance bounds them already, the limit
 *   is credit — how far below zero the wallet may go;
 * - `paid_by_other` (an organisation billing user or a delegate pays): the limit is their monthly
 *   budget, a cap on what they may spend of someone else's wallet.
 */
export type BillingMode = 'exempt' | 'own_wallet' | 'paid_by_other';

export interface UserBillingConfig {
  mode: BillingMode;
  /** The wallet charged for the user's keys (null when exempt). */
  payer_id: string | null;
  /** Which setting an authorised spending limit sets in this mode. */
  applied_as: 'credit_limit' | 'monthly_budget';
  /** The authorised spending limit in force (that setting's value), null for none. */
  spending_limit_usd: number | null;
  credit_limit_usd: number | null;
  monthly_budget_usd: number | null;
}

const usdColumn = (usd: number | null) => (usd === null || usd === 0 ? null : usd.toFixed(6));
const usdValue = (column: string | number | null) => (column === null ? null : Number(column));

/** The user's billing mode and limits now. */
export async function billingConfigOf(knex: Knex, userId: number): Promise<UserBillingConfig> {
  const row = (await knex('users as u')
    .leftJoin('organisations as o', 'o.id', 'u.organisation_id')
    .where('u.id', userId)
    .first('u.billing_exempt', 'o.billing_exempt as organisation_exempt', 'u.credit_limit_usd', 'u.monthly_budget_usd')) as {
    billing_exempt: boolean;
    organisation_exempt: boolean | null;
    credit_limit_usd: string | null;
    monthly_budget_usd: string | null;
  };
  const credit = usdValue(row.credit_limit_usd);
  const monthly = usdValue(row.monthly_budget_usd);
  if (row.billing_exempt || row.organisation_exempt)
    return {
      mode: 'exempt',
      payer_id: null,
      applied_as: 'monthly_budget',
      spending_limit_usd: monthly,
      credit_limit_usd: credit,
      monthly_budget_usd: monthly,
    };
  const payer = await resolveEffectivePayer(knex, userId);
  const own = payer.source === 'caller';
  return {
    mode: own ? 'own_wallet' : 'paid_by_other',
    payer_id: payer.payerId,
    applied_as: own ? 'credit_limit' : 'monthly_budget',
    spending_limit_usd: own ? credit : monthly,
    credit_limit_usd: credit,
    monthly_budget_usd: monthly,
  };
}

/**
 * Whether `actor` may give credit to the wallet of `walletUserId` — the one rule for it
 * (docs/administration.md "User billing"): platform admins and owners may; anyone else not to the
 * wallet that pays for their own keys (their organisation's billing user, their delegate, their
 * own), as that is credit they would spend themselves. Asked when a credit limit is set, and when
 * a change would make a wallet that carries credit pay for the actor's keys — a billing user
 * nominated (core/billing/organisation.ts), or reactivated — in that change's transaction after
 * it is made, so it reads who pays as it will be (outside probe: an org admin credited a member,
 * then nominated her billing user and spent the credit).
 */
export async function mayGiveCredit(knex: Knex, actor: { id: number; role: Role }, walletUserId: number): Promise<boolean> {
  if (roleAtLeast(actor.role, 'platform_admin')) return true;
  return (await resolveEffectivePayer(knex, actor.id)).userId !== walletUserId;
}

/**
 * The credit on `walletUserId`'s wallet that `actor` may not give (0: none, or they may give it):
 * asked after a change that makes that wallet pay for the actor's own keys — a billing user
 * nominated, or reactivated — so each refuses in its own words when this is above 0.
 */
export async function creditActorMayNotGive(knex: Knex, actor: { id: number; role: Role }, walletUserId: number): Promise<number> {
  const credit = await creditLimitOf(knex, walletUserId);
  return credit > 0 && !(await mayGiveCredit(knex, actor, walletUserId)) ? credit : 0;
}

/** The credit limit of `userId`'s wallet in USD (0: none). */
export async function creditLimitOf(knex: Knex, userId: number): Promise<number> {
  const row = (await knex('users').where({ id: userId }).first('credit_limit_usd')) as { credit_limit_usd: string | null } | undefined;
  return Number(row?.credit_limit_usd ?? 0);
}

/** Sets the credit limit (null or 0: none); returns the secret hashes of the keys to announce. */
export async function setCreditLimit(knex: Knex, userId: number, usd: number | null, now: Date): Promise<string[]> {
  await knex('users')
    .where({ id: userId })
    .update({ credit_limit_usd: usdColumn(usd), updated_at: now });
  return (await knex('api_keys')
    .where({ payer_id: userPayerId(userId) })
    .pluck('secret_hash')) as string[];
}

/**
 * Sets the monthly budget (null or 0: none) and writes the cap to the store, so every gateway
 * applies it from the next request; a store that cannot be reached now leaves the gateways to
 * re-read PostgreSQL within a minute (the error is handed to `onStoreError`).
 */
export async function setMonthlyBudget(
  knex: Knex,
  store: Store,
  userId: number,
  usd: number | null,
  now: Date,
  onStoreError: (error: unknown) => void,
): Promise<void> {
  await knex('users')
    .where({ id: userId })
    .update({ monthly_budget_usd: usdColumn(usd), updated_at: now });
  await republishSpendGroupCap(knex, store, { scope: 'user', id: userId }, onStoreError);
}
