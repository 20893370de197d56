// Which gateway keys a portal user may see and change: members their own, department admins
// those of their department's users, org admins their organisation's, platform admins and owners
// every key. One place, used by the list (as query filters) and by each key page (as a check).
import type { Request } from 'express';
import type { Knex } from 'knex';
import { isAllowed, roleAtLeast, type Action, type Principal } from '../../../../core/identity/index.js';
import type { KeyListQuery, KeyRecord } from '../../../../core/keys/index.js';

/** The list filters that hold exactly the principal's keys. */
export function keyListScope(principal: Principal): Pick<KeyListQuery, 'ownerUserId' | 'organisationId' | 'ownerDepartmentId'> {
  if (roleAtLeast(principal.role, 'platform_admin')) return {};
  // An admin without an organisation (or department) has nothing beyond their own keys.
  if (principal.role === 'org_admin' && principal.organisationId !== null) return { organisationId: principal.organisationId };
  if (principal.role === 'department_admin' && principal.organisationId !== null && principal.departmentId !== null)
    return { organisationId: principal.organisationId, ownerDepartmentId: principal.departmentId };
  return { ownerUserId: principal.id };
}

/**
 * The scope of a signed-in request's views (keys, usage, request log, models): the role's scope,
 * narrowed to the caller's own keys while an admin has admin mode off, and for platform admins to
 * the organisation they chose with /dashboard/set-admin-org.
 */
export function viewScope(req: Request): Pick<KeyListQuery, 'ownerUserId' | 'organisationId' | 'ownerDepartmentId'> {
  const user = req.user!;
  if (user.role !== 'member' && req.session?.adminMode === false) return { ownerUserId: user.id };
  if (roleAtLeast(user.role, 'platform_admin') && req.session?.adminOrgId !== undefined) return { organisationId: req.session.adminOrgId };
  return keyListScope(user);
}

/**
 * Whether the principal may act on this key: `keys.manage` (see and change it) unless another
 * action of the permission table is named; the key's owner decides the target.
 */
export async function mayManageKey(database: Knex, principal: Principal, key: KeyRecord, action: Action = 'keys.manage'): Promise<boolean> {
  // Keys from the Management API, the operator or bootstrap belong to the platform, not a user.
  if (key.ownerUserId === null) return roleAtLeast(principal.role, 'platform_admin') && isAllowed(principal, action);
  const owner = (await database('users').where({ id: key.ownerUserId }).first('department_id')) as
    { department_id: number | null } | undefined;
  return isAllowed(principal, action, {
    userId: key.ownerUserId,
    organisationId: key.organisationId,
    departmentId: owner?.department_id ?? null,
  });
}
