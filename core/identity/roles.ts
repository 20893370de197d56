// Roles and the one permission table every portal route is checked against. The admin issue
// adds its actions here; a route never compares roles itself.

/** Roles from most to least powerful. */
export const roles = ['owner', 'platform_admin', 'org_admin', 'department_admin', 'member'] as const;

/** A user's role. */
export type Role = (typeof roles)[number];

/** Account states. */
export const userStatuses = ['active', 'suspended', 'archived'] as const;

/** A user's status. */
export type UserStatus = (typeof userStatuses)[number];

/** Higher is more powerful. */
export function roleRank(role: Role): number {
  return roles.length - roles.indexOf(role);
}

/** Whether `role` is at least `minimum`. */
export function roleAtLeast(role: Role, minimum: Role): boolean {
  return roleRank(role) >= roleRank(minimum);
}

/**
 * Each action and the least role allowed to perform it. `scope` says how far the grant reaches:
 * `self` (own account), `department`, `organisation`, or `platform` (every organisation).
 */
export const permissions = {
  'dashboard.view': { minimum: 'member', scope: 'self' },
  'profile.update': { minimum: 'member', scope: 'self' },
  'legal.accept': { minimum: 'member', scope: 'self' },
  // A member manages their own keys; admins the keys of their department, organisation or all.
  'keys.manage': { minimum: 'member', scope: 'self' },
  // API tokens (svc_…) for a team: department admins for their department, org admins for any.
  'tokens.manage': { minimum: 'department_admin', scope: 'department' },
  // Usage and the request log: the requests of the keys the caller may see (the keys' scope).
  'usage.view': { minimum: 'member', scope: 'self' },
  // Projects (docs/projects.md): everyone sees the projects they belong to; department admins
  // create them in their department, org admins in any department of their organisation.
  'projects.view': { minimum: 'member', scope: 'self' },
  // Saved reports and their exports (docs/reports.md): each user their own, over their reach.
  'reports.manage': { minimum: 'member', scope: 'self' },
  // Budget policies and alerts (docs/budgets.md): everyone their own; org admins their organisation's.
  'budgets.manage': { minimum: 'member', scope: 'self' },
  'projects.create': { minimum: 'department_admin', scope: 'department' },
  // Billing (docs/billing.md): everyone funds and sees the wallet that pays for them; the wallet's
  // cards and automatic top-up are managed by its own user (core/billing/payer.ts decides whose).
  'billing.manage': { minimum: 'member', scope: 'self' },
  // Nominating the organisation's billing user, its monthly budget and billing settings.
  'billing.organisation.manage': { minimum: 'org_admin', scope: 'organisation' },
  // The autorouter (docs/autorouter.md): everyone sets their own and their keys' preferences;
  // admins override a key within their reach, and org admins set their organisation's policy.
  'autorouter.manage': { minimum: 'member', scope: 'self' },
  'autorouter.override': { minimum: 'department_admin', scope: 'department' },
  'autorouter.organisation': { minimum: 'org_admin', scope: 'organisation' },
  'admin.view': { minimum: 'department_admin', scope: 'department' },
  'admin.users.manage': { minimum: 'department_admin', scope: 'department' },
  'admin.organisation.manage': { minimum: 'org_admin', scope: 'organisation' },
  'admin.platform.manage': { minimum: 'platform_admin', scope: 'platform' },
  'admin.owner.manage': { minimum: 'owner', scope: 'platform' },
} as const satisfies Record<string, { minimum: Role; scope: 'self' | 'department' | 'organisation' | 'platform' }>;

/** An action of the permission table. */
export type Action = keyof typeof permissions;

/** Who is asking: what authorisation needs to know, read fresh from the database per request. */
export interface Principal {
  id: number;
  role: Role;
  status: UserStatus;
  organisationId: number | null;
  departmentId: number | null;
}

/** What a request acts on, when it is someone else's: the target's organisation and department. */
export interface Target {
  organisationId: number | null;
  departmentId: number | null;
  userId?: number;
}

/**
 * The one authorisation decision: the principal must be active, hold at least the action's role,
 * and the target must lie within the reach of that role (owners and platform admins reach every
 * organisation, org admins their own, department admins their department, members themselves).
 */
export function isAllowed(principal: Principal, action: Action, target?: Target): boolean {
  if (principal.status !== 'active') return false;
  const rule = permissions[action];
  if (!roleAtLeast(principal.role, rule.minimum)) return false;
  if (!target) return true;
  if (roleAtLeast(principal.role, 'platform_admin')) return true;
  if (principal.role === 'org_admin') return target.organisationId !== null && target.organisationId === principal.organisationId;
  if (principal.role === 'department_admin')
    return (
      target.organisationId === principal.organisationId && target.departmentId !== null && target.departmentId === principal.departmentId
    );
  return target.userId === principal.id;
}
