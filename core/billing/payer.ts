// Who pays for a request (the gateway API's "effective payer"): the project when the caller
// acts for one, else the billing user the caller's organisation nominated, else the user the
// caller's billing was delegated to, else the caller. One rule, used by the billing pages (which
// wallet a top-up funds) and by the keys the portal creates (which wallet the gateway debits).
import type { Knex } from 'knex';
import { roleAtLeast, type Principal } from '../identity/roles.js';

/** Why this payer was chosen, in the rule's order. */
export type PayerSource = 'project' | 'organisation_billing_user' | 'delegated_user' | 'caller';

/** The wallet that pays, and for a user wallet, whose it is. */
export interface EffectivePayer {
  payerId: string;
  source: PayerSource;
  /** The user whose wallet it is (null for a project wallet). */
  userId: number | null;
}

/** Payer id of a user's wallet. */
export const userPayerId = (userId: number) => `user:${userId}`;

/** Largest id the users table holds (a PostgreSQL `integer`). */
const maxUserId = 2_147_483_647;

/**
 * The user behind a `user:<id>` payer id, else undefined — also for an id no user can have (a
 * payer is free text at the Management API; past the column's range a look-up would fail).
 */
export function payerUserId(payerId: string): number | undefined {
  const match = /^user:([1-9][0-9]{0,9})$/.exec(payerId);
  const id = match ? Number(match[1]) : undefined;
  return id !== undefined && id <= maxUserId ? id : undefined;
}

/** The facts the rule reads. */
export interface PayerFacts {
  callerUserId: number;
  /** `project:<id>` when the request is made for a project. */
  projectPayerId?: string | null;
  organisationBillingUserId: number | null;
  delegateUserId: number | null;
}

/** The rule itself, on facts already read. */
export function effectivePayer(facts: PayerFacts): EffectivePayer {
  if (facts.projectPayerId) return { payerId: facts.projectPayerId, source: 'project', userId: null };
  if (facts.organisationBillingUserId !== null)
    return {
      payerId: userPayerId(facts.organisationBillingUserId),
      source: 'organisation_billing_user',
      userId: facts.organisationBillingUserId,
    };
  if (facts.delegateUserId !== null)
    return { payerId: userPayerId(facts.delegateUserId), source: 'delegated_user', userId: facts.delegateUserId };
  return { payerId: userPayerId(facts.callerUserId), source: 'caller', userId: facts.callerUserId };
}

/**
 * Reads the facts for `userId` and applies the rule. An organisation's billing user counts only
 * while they are an active member of that organisation; a delegate only while active.
 */
export async function resolveEffectivePayer(knex: Knex, userId: number, projectPayerId?: string | null): Promise<EffectivePayer> {
  const row = (await knex('users as u')
    .leftJoin('organisations as o', 'o.id', 'u.organisation_id')
    .leftJoin('users as b', function joinBillingUser() {
      this.on('b.id', '=', 'o.billing_user_id').andOn('b.organisation_id', '=', 'o.id').andOnVal('b.status', '=', 'active');
    })
    .leftJoin('billing_delegations as d', 'd.user_id', 'u.id')
    .leftJoin('users as del', function joinDelegate() {
      this.on('del.id', '=', 'd.delegate_user_id').andOnVal('del.status', '=', 'active');
    })
    .where('u.id', userId)
    .first('b.id as billing_user_id', 'del.id as delegate_user_id')) as
    { billing_user_id: number | null; delegate_user_id: number | null } | undefined;
  return effectivePayer({
    callerUserId: userId,
    projectPayerId,
    organisationBillingUserId: row?.billing_user_id ?? null,
    delegateUserId: row?.delegate_user_id ?? null,
  });
}

/**
 * The payer a key created in the portal by `ownerUserId` is charged to: the effective payer,
 * or none when the owner or their organisation is billing-exempt (spend is then bounded by key
 * budgets and the organisation's monthly budget only).
 */
export async function payerForPortalKey(knex: Knex, ownerUserId: number, projectPayerId?: string | null): Promise<string | null> {
  const exempt = (await knex('users as u')
    .leftJoin('organisations as o', 'o.id', 'u.organisation_id')
    .where('u.id', ownerUserId)
    .first('o.billing_exempt as organisation_exempt', 'u.billing_exempt as user_exempt')) as
    { organisation_exempt: boolean | null; user_exempt: boolean } | undefined;
  if (exempt?.organisation_exempt || exempt?.user_exempt) return null;
  return (await resolveEffectivePayer(knex, ownerUserId, projectPayerId)).payerId;
}

/**
 * Whether `principal` manages the wallet `payerId` (its cards, automatic top-up, every payment
 * in its history): the wallet's own user, and for an organisation's nominated billing user, the
 * administrators of that organisation. Anyone whose effective payer it is may still add funds.
 */
export async function mayManagePayer(knex: Knex, principal: Principal, payerId: string): Promise<boolean> {
  const owner = payerUserId(payerId);
  if (owner === undefined) return roleAtLeast(principal.role, 'platform_admin');
  if (owner === principal.id) return true;
  if (!roleAtLeast(principal.role, 'org_admin') || principal.organisationId === null) return false;
  const nominated = await knex('organisations').where({ id: principal.organisationId, billing_user_id: owner }).first('id');
  return nominated !== undefined;
}
