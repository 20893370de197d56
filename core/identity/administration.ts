// User administration (docs/administration.md): who an administrator may act on, and the rules
// of each change — roles never above the actor's own, the last owner kept, hard deletion as
// anonymisation. One place for these decisions; the portal's admin routes call it.
import type { Knex } from 'knex';
import { endNominations, repointKeysPaidThrough } from '../billing/organisation.js';
import { creditActorMayNotGive } from '../billing/user-limits.js';
import { ApiError } from '../errors/index.js';
import { leaveProjects, projectPayerPattern, projectsOutside } from '../projects/projects.js';
import { isAllowed, roleAtLeast, roleRank, roles, type Action, type Principal, type Role, type UserStatus } from './roles.js';

/** A user as an administrator sees them in lists and on the detail page. */
export interface AdministeredUser {
  id: number;
  email: string;
  display_name: string;
  role: Role;
  status: UserStatus;
  organisation_id: number | null;
  organisation_name: string | null;
  department_id: number | null;
  department_name: string | null;
  email_verified: boolean;
  created_at: string;
  deleted: boolean;
  billing_exempt: boolean;
  credit_limit_usd: number | null;
  /** The user's own monthly budget over the keys they created (core/budget/spend-groups.ts); null: none. */
  monthly_budget_usd: number | null;
}

/** The row behind an AdministeredUser: the same columns, with the raw timestamps. */
type Row = Omit<AdministeredUser, 'email_verified' | 'created_at' | 'deleted' | 'credit_limit_usd' | 'monthly_budget_usd'> & {
  credit_limit_usd: string | null;
  monthly_budget_usd: string | null;
  email_verified_at: Date | null;
  created_at: Date;
  deleted_at: Date | null;
};

function present(row: Row): AdministeredUser {
  return {
    id: row.id,
    email: row.email,
    display_name: row.display_name,
    role: row.role,
    status: row.status,
    organisation_id: row.organisation_id,
    organisation_name: row.organisation_name,
    department_id: row.department_id,
    department_name: row.department_name,
    email_verified: row.email_verified_at !== null,
    created_at: new Date(row.created_at).toISOString(),
    deleted: row.deleted_at !== null,
    billing_exempt: Boolean(row.billing_exempt),
    credit_limit_usd: row.credit_limit_usd === null ? null : Number(row.credit_limit_usd),
    monthly_budget_usd: row.monthly_budget_usd === null ? null : Number(row.monthly_budget_usd),
  };
}

/**
 * Which users an administrator's lists hold: platform admins and owners every user (or one
 * organisation they chose), org admins their organisation's, department admins their
 * department's — in each case none of a higher role than the administrator's own (those answer
 * 404, so a list does not show them). Anyone else: nobody (the routes refuse them first).
 */
export interface UserScope {
  organisationId?: number;
  departmentId?: number;
  /** Only users of this role or below (the administrator's own role). */
  upToRole?: Role;
  nobody?: boolean;
}

/** The roles an administrator of `role` may act on: their own and those below (mayAdminister). */
const rolesWithin = (role: Role): Role[] => roles.filter((r) => roleRank(r) <= roleRank(role));

/** The scope of an administrator, optionally narrowed to one organisation (platform admins). */
export function userScopeOf(actor: Principal, chosenOrganisationId?: number): UserScope {
  const upToRole = actor.role;
  if (roleAtLeast(actor.role, 'platform_admin'))
    return chosenOrganisationId === undefined ? { upToRole } : { organisationId: chosenOrganisationId, upToRole };
  if (actor.role === 'org_admin' && actor.organisationId !== null) return { organisationId: actor.organisationId, upToRole };
  if (actor.role === 'department_admin' && actor.organisationId !== null && actor.departmentId !== null)
    return { organisationId: actor.organisationId, departmentId: actor.departmentId, upToRole };
  return { nobody: true };
}

/** Filters of the user list. */
export interface UserListQuery {
  /** Part of the email or display name, any case. */
  q?: string;
  role?: Role;
  status?: UserStatus;
  /** Also list hard-deleted (anonymised) accounts. */
  includeDeleted?: boolean;
  limit: number;
  /** Users with a smaller id than this (the previous page's last id). */
  before?: number;
}

const selectUsers = (knex: Knex) =>
  knex('users')
    .leftJoin('organisations', 'organisations.id', 'users.organisation_id')
    .leftJoin('departments', 'departments.id', 'users.department_id')
    .select(
      'users.id',
      'users.email',
      'users.display_name',
      'users.role',
      'users.status',
      'users.organisation_id',
      'organisations.name as organisation_name',
      'users.department_id',
      'departments.name as department_name',
      'users.email_verified_at',
      'users.created_at',
      'users.deleted_at',
      'users.billing_exempt',
      'users.credit_limit_usd',
      'users.monthly_budget_usd',
    );

/**
 * Narrows a query joining `users` (as `alias`) to the users within the scope: the one reach rule
 * of every list that shows users or what belongs to them (the user list, promotion grants).
 */
export function whereWithinScope<Q extends Knex.QueryBuilder>(q: Q, scope: UserScope, alias = 'users'): Q {
  if (scope.nobody) return q.whereRaw('false') as Q;
  if (scope.organisationId !== undefined) q.where(`${alias}.organisation_id`, scope.organisationId);
  if (scope.departmentId !== undefined) q.where(`${alias}.department_id`, scope.departmentId);
  if (scope.upToRole !== undefined) q.whereIn(`${alias}.role`, rolesWithin(scope.upToRole));
  return q;
}

/** A page of users within the scope, newest first, and the cursor of the next page. */
export async function listUsers(
  knex: Knex,
  scope: UserScope,
  query: UserListQuery,
): Promise<{ data: AdministeredUser[]; next_before: number | null }> {
  if (scope.nobody) return { data: [], next_before: null };
  let q = whereWithinScope(
    selectUsers(knex)
      .orderBy('users.id', 'desc')
      .limit(query.limit + 1),
    scope,
  );
  if (!query.includeDeleted) q = q.whereNull('users.deleted_at');
  if (query.role) q = q.where('users.role', query.role);
  if (query.status) q = q.where('users.status', query.status);
  if (query.before !== undefined) q = q.where('users.id', '<', query.before);
  if (query.q) {
    const like = `%${query.q.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    q = q.where((w) => w.whereRaw('lower(users.email) like ?', [like]).orWhereRaw('lower(users.display_name) like ?', [like]));
  }
  const rows = (await q) as Row[];
  const more = rows.length > query.limit;
  const data = rows.slice(0, query.limit).map(present);
  return { data, next_before: more ? data.at(-1)!.id : null };
}

/** One user, whatever the scope (the caller checks it with mayAdminister). */
export async function findAdministeredUser(knex: Knex, id: number): Promise<AdministeredUser | undefined> {
  const row = (await selectUsers(knex).where('users.id', id).first()) as Row | undefined;
  return row ? present(row) : undefined;
}

/**
 * Whether `actor` may perform `action` on `target`: the permission table's reach (organisation,
 * department), and never on someone of a higher role. Out of reach reads as "no such user".
 */
export function mayAdminister(actor: Principal, action: Action, target: AdministeredUser): boolean {
  return (
    isAllowed(actor, action, { organisationId: target.organisation_id, departmentId: target.department_id, userId: target.id }) &&
    rolesWithin(actor.role).includes(target.role)
  );
}

/** The refusal for a user outside the actor's reach: the same as for one that does not exist. */
export const noSuchUser = () =>
  new ApiError('not_found', { param: 'user_id', humanMessage: 'There is no such user among those you administer' });

/** Throws unless at least one other active owner remains when `target` stops being one. */
async function keepAnOwner(knex: Knex, target: AdministeredUser): Promise<void> {
  if (target.role !== 'owner') return;
  const [row] = await knex('users')
    .where({ role: 'owner', status: 'active' })
    .whereNull('deleted_at')
    .whereNot({ id: target.id })
    .count({ n: '*' });
  if (Number((row as { n: string | number }).n) === 0)
    throw new ApiError('conflict', { humanMessage: 'This is the last active owner: make someone else an owner first' });
}

/**
 * Sets a role: never above the actor's own, and the last owner stays an owner. The pending
 * invitations the user sent that the new role may not grant are withdrawn (mayGrantInvite).
 */
export async function setUserRole(
  knex: Knex,
  actor: Principal,
  target: AdministeredUser,
  role: Role,
  now: Date,
  options: { stepDownConfirmed?: boolean } = {},
): Promise<void> {
  if (roleRank(role) > roleRank(actor.role))
    throw new ApiError('forbidden', { param: 'role', humanMessage: `You cannot give a role above your own (${actor.role})` });
  if (role !== 'owner') await keepAnOwner(knex, target);
  // Stepping down from one's own role is said on purpose: nobody but another administrator can give it back.
  if (target.id === actor.id && roleRank(role) < roleRank(target.role) && !options.stepDownConfirmed)
    throw new ApiError('validation_error', {
      status: 422,
      param: 'confirm_step_down',
      humanMessage: `Stepping down from ${target.role.replace('_', ' ')} to ${role.replace('_', ' ')} cannot be undone by you (another administrator would have to give the role back): send confirm_step_down "yes"`,
    });
  await knex.transaction(async (trx) => {
    await trx('users').where({ id: target.id }).update({ role, updated_at: now });
    await withdrawInvitesNoLongerGranted(trx, target.id);
  });
}

/**
 * Sets a status. Leaving `active` ends every session of the user (UserRepository.setStatus
 * semantics, in one transaction); the caller announces the user's keys so the gateways refuse
 * them. Nobody changes their own status (an administrator cannot lock themselves out). A billing
 * user or delegate pays only while active, so the keys they pay for are re-pointed in the same
 * transaction — to their owners' own wallets on suspension, back on reactivation — and their
 * hashes returned, to announce as well.
 */
export async function setUserStatus(
  knex: Knex,
  actor: Principal,
  target: AdministeredUser,
  status: UserStatus,
  now: Date,
): Promise<string[]> {
  if (target.id === actor.id)
    throw new ApiError('forbidden', {
      param: 'status',
      humanMessage: 'You cannot change your own account status; another administrator can',
    });
  if (target.deleted) throw new ApiError('conflict', { humanMessage: 'This account was deleted; it cannot be reactivated' });
  if (status !== 'active') await keepAnOwner(knex, target);
  return knex.transaction(async (trx) => {
    await trx('users').where({ id: target.id }).update({ status, updated_at: now });
    if (status !== 'active') await trx('portal_sessions').where({ user_id: target.id }).delete();
    // Reactivating a billing user (or delegate) makes their wallet pay again: credit on it that the
    // actor may not give (it would pay for the actor's own keys) is refused as at nomination — else
    // suspend, credit, reactivate would spend it (mayGiveCredit, core/billing/user-limits.ts).
    if (status === 'active' && (await creditActorMayNotGive(trx, actor, target.id)) > 0)
      throw new ApiError('forbidden', {
        param: 'status',
        humanMessage: `This user's wallet has credit and, once they are active, pays for your own keys: credit you may not give yourself. Remove their credit limit first, or ask a platform administrator to reactivate them`,
      });
    return repointKeysPaidThrough(trx, target.id);
  });
}

/** An invitation as the sender's authority sees it: where it places the invitee, and as what. */
export interface InviteGrant {
  organisationId: number;
  departmentId: number | null;
  role: Role;
}

/**
 * Whether `inviter` may grant `invite` — the one rule of whose invitation places someone as
 * what: an active user who may invite users where it places them (the permission table's
 * `admin.users.manage` reach: platform admins and owners anywhere, org admins in their
 * organisation, department admins in their department) and holds at least the invited role. An
 * invitation grants in its sender's name, so it is checked when the invitation is sent and again
 * when it is accepted (core/identity/invites.ts); a sender since demoted, suspended, deleted or
 * moved can no longer hand out what they sent (outside probe).
 */
export function mayGrantInvite(inviter: Principal | undefined, invite: InviteGrant): boolean {
  return (
    inviter !== undefined &&
    isAllowed(inviter, 'admin.users.manage', { organisationId: invite.organisationId, departmentId: invite.departmentId }) &&
    roleRank(invite.role) <= roleRank(inviter.role)
  );
}

/** A user as the authorisation rule reads them, or undefined. */
export async function principalOf(knex: Knex, userId: number): Promise<Principal | undefined> {
  const row = (await knex('users').where({ id: userId }).first('id', 'role', 'status', 'organisation_id', 'department_id')) as
    { id: number; role: Role; status: UserStatus; organisation_id: number | null; department_id: number | null } | undefined;
  return row && { id: row.id, role: row.role, status: row.status, organisationId: row.organisation_id, departmentId: row.department_id };
}

/**
 * Withdraws the pending invitations `userId` sent that they may no longer grant (mayGrantInvite),
 * in the caller's transaction after the change: called when their role, organisation or
 * department changes and when their account is deleted. A suspension withdraws nothing — it may
 * be undone — but while it lasts their invitations are refused at acceptance by the same rule.
 */
export async function withdrawInvitesNoLongerGranted(trx: Knex, userId: number): Promise<void> {
  const inviter = await principalOf(trx, userId);
  const pending = (await trx('invites')
    .where({ invited_by: userId, status: 'pending' })
    .select('id', 'organisation_id', 'department_id', 'role')) as {
    id: number;
    organisation_id: number;
    department_id: number | null;
    role: Role;
  }[];
  const asActive = inviter && (inviter.status === 'suspended' ? { ...inviter, status: 'active' as const } : inviter);
  const stale = pending
    .filter((i) => !mayGrantInvite(asActive, { organisationId: i.organisation_id, departmentId: i.department_id, role: i.role }))
    .map((i) => i.id);
  if (stale.length > 0) await trx('invites').whereIn('id', stale).where({ status: 'pending' }).update({ status: 'revoked' });
}

/**
 * Places a user in an organisation (and department, and role when given), in the caller's
 * transaction: their keys move with them — keys are scoped by the organisation they belong to —
 * and are re-pointed to whoever pays there; the tokens they issued for a project or a team of an
 * organisation they leave stay there, revoked, and their pending invitations there are withdrawn. An organisation they leave no longer has them as its
 * billing user, and its members' keys follow. The one step behind an administrator's move and an
 * accepted invite. Returns the secret hashes of the user's keys and of those re-pointed, to announce.
 */
export async function placeInOrganisation(
  trx: Knex,
  userId: number,
  place: { organisationId: number | null; departmentId: number | null; role?: Role },
  now: Date,
): Promise<string[]> {
  await trx('users')
    .where({ id: userId })
    .update({
      organisation_id: place.organisationId,
      department_id: place.departmentId,
      ...(place.role && { role: place.role }),
      updated_at: now,
    });
  // A project's tokens stay with the project's organisation; in projects of another organisation
  // than the new one the person is a member no more, and the tokens they issued there stop working.
  const leftProjects = await leaveProjects(trx, userId, await projectsOutside(trx, userId, place.organisationId), now);
  // So do the tokens they issued for a team (department) of an organisation they leave: the team's,
  // not theirs — after a move the new organisation's administrators managed it, the old one's could
  // not even delete the department (outside probe) — and its secret went with them.
  const leftTeams = (await trx('api_keys')
    .where({ owner_user_id: userId, kind: 'token' })
    .whereRaw("coalesce(metadata->>'department_id', '') <> ''")
    .whereRaw('organisation_id is distinct from ?', [place.organisationId])
    .whereNot({ status: 'revoked' })
    .update({ status: 'revoked', revoked_at: now, updated_at: now })
    .returning('secret_hash')) as { secret_hash: string }[];
  const keys = (await trx('api_keys')
    .where({ owner_user_id: userId })
    .where((q) => q.whereNull('payer_id').orWhereNot('payer_id', 'like', projectPayerPattern))
    .whereRaw("(kind <> 'token' or coalesce(metadata->>'department_id', '') = '')")
    .update({ organisation_id: place.organisationId, updated_at: now })
    .returning('secret_hash')) as { secret_hash: string }[];
  // Invitations they sent that they may no longer grant (into an organisation they leave, above a
  // new role) are withdrawn: one accepted later would grant a role in their name (outside probe).
  await withdrawInvitesNoLongerGranted(trx, userId);
  // After the user's row is updated (and so locked): a nomination of them committing meanwhile is
  // either seen here and ended, or waits and is refused as naming a non-member.
  const left = await endNominations(trx, userId, place.organisationId);
  const repointed = await repointKeysPaidThrough(trx, userId, left);
  return [...new Set([...keys.map((k) => k.secret_hash), ...leftTeams.map((k) => k.secret_hash), ...leftProjects, ...repointed])];
}

/** Moves a user into an organisation (no department there yet); the key hashes to announce. */
export async function moveUserToOrganisation(
  knex: Knex,
  target: AdministeredUser,
  organisationId: number | null,
  now: Date,
): Promise<string[]> {
  return knex.transaction(async (trx) => {
    if (organisationId !== null && !(await trx('organisations').where({ id: organisationId }).first('id')))
      throw new ApiError('not_found', { param: 'org_id', humanMessage: 'There is no such organisation' });
    return placeInOrganisation(trx, target.id, { organisationId, departmentId: null }, now);
  });
}

/** Puts a user in a department of their organisation, or in none (withdrawing invitations they may no longer grant). */
export async function setUserDepartment(knex: Knex, target: AdministeredUser, departmentId: number | null, now: Date): Promise<void> {
  if (departmentId !== null) {
    const department = (await knex('departments').where({ id: departmentId }).first('organisation_id')) as
      { organisation_id: number } | undefined;
    if (!department || department.organisation_id !== target.organisation_id)
      throw new ApiError('validation_error', {
        status: 422,
        param: 'department_id',
        humanMessage: 'The department must belong to the user’s organisation',
      });
  }
  await knex.transaction(async (trx) => {
    await trx('users').where({ id: target.id }).update({ department_id: departmentId, updated_at: now });
    await withdrawInvitesNoLongerGranted(trx, target.id);
  });
}

/**
 * Hard deletion: the person's data goes — email, name, password, linked sign-ins, sessions,
 * preferences, pending invites to their address — and their keys are revoked, and the pending
 * invitations they sent withdrawn. The row stays as
 * an anonymised tombstone (`deleted-<id>@invalid`, archived), so the ledger, payments and the
 * audit log keep their references and totals. The account never pays again: its nominations as
 * billing user end and the keys it paid for are re-pointed. Returns the secret hashes of the
 * revoked and re-pointed keys.
 */
export async function hardDeleteUser(knex: Knex, actor: Principal, target: AdministeredUser, now: Date): Promise<string[]> {
  // Refusals of what one may not do to oneself are 403, as for one's own credit or budget (users.ts).
  if (target.id === actor.id)
    throw new ApiError('forbidden', { humanMessage: 'You cannot delete your own account here; another administrator can' });
  await keepAnOwner(knex, target);
  return knex.transaction(async (trx) => {
    await trx('invites').whereRaw('lower(email) = lower(?)', [target.email]).where({ status: 'pending' }).update({ status: 'revoked' });
    await trx('users')
      .where({ id: target.id })
      .update({
        email: `deleted-${target.id}@invalid`,
        display_name: 'Deleted user',
        password_hash: null,
        status: 'archived',
        role: 'member',
        display_settings: '{}',
        deleted_at: now,
        updated_at: now,
      });
    // The invitations they sent: a deleted account grants nothing (mayGrantInvite).
    await withdrawInvitesNoLongerGranted(trx, target.id);
    await trx('user_identities').where({ user_id: target.id }).delete();
    await trx('portal_sessions').where({ user_id: target.id }).delete();
    await trx('one_time_tokens').where({ user_id: target.id }).delete();
    await trx('user_get_started').where({ user_id: target.id }).delete();
    await trx('user_help_panels').where({ user_id: target.id }).delete();
    await trx('project_members').where({ user_id: target.id }).delete();
    const keys = (await trx('api_keys')
      .where({ owner_user_id: target.id })
      .whereNot({ status: 'revoked' })
      .update({ status: 'revoked', updated_at: now })
      .returning('secret_hash')) as { secret_hash: string }[];
    const repointed = await repointKeysPaidThrough(trx, target.id, await endNominations(trx, target.id, null));
    return [...new Set([...keys.map((k) => k.secret_hash), ...repointed])];
  });
}
