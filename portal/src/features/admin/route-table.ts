// The administration area's permission table (docs/administration.md): every admin route, the
// action of core/identity's permission table it needs, and so the least role that may call it.
// Routes are registered through adminRoute(), which takes the action from here — a route missing
// from the table fails at start-up — and the authorisation suite is generated from this list.
import type { RequestHandler, Router } from 'express';
import type { Action } from '../../../../core/identity/index.js';
import { requireAction } from '../../web/principal.js';

/** One admin route: method, Express path, and the action it needs. */
export interface AdminRoute {
  method: 'GET' | 'POST' | 'DELETE';
  path: string;
  action: Action;
  /** Whether the result is narrowed to the caller's scope (organisation, department) or acts on one target in it. */
  scoped: boolean;
}

export const adminRoutes: readonly AdminRoute[] = [
  { method: 'GET', path: '/dashboard/admin/users', action: 'admin.view', scoped: true },
  { method: 'GET', path: '/dashboard/admin/users/invite', action: 'admin.users.manage', scoped: true },
  { method: 'POST', path: '/dashboard/admin/users/invite', action: 'admin.users.manage', scoped: true },
  { method: 'POST', path: '/dashboard/admin/users/invite/:invite_id/revoke', action: 'admin.users.manage', scoped: true },
  { method: 'GET', path: '/dashboard/admin/users/:user_id', action: 'admin.view', scoped: true },
  { method: 'POST', path: '/dashboard/admin/users/:user_id/role', action: 'admin.users.manage', scoped: true },
  { method: 'POST', path: '/dashboard/admin/users/:user_id/status', action: 'admin.users.manage', scoped: true },
  { method: 'POST', path: '/dashboard/admin/users/:user_id/department', action: 'admin.organisation.manage', scoped: true },
  { method: 'POST', path: '/dashboard/admin/users/:user_id/hard-delete', action: 'admin.organisation.manage', scoped: true },
  { method: 'POST', path: '/dashboard/admin/users/:user_id/org', action: 'admin.platform.manage', scoped: false },
  { method: 'POST', path: '/dashboard/admin/users/:user_id/billing-exempt', action: 'admin.platform.manage', scoped: false },
  { method: 'POST', path: '/dashboard/admin/users/:user_id/credit-limit', action: 'admin.organisation.manage', scoped: true },
  { method: 'POST', path: '/dashboard/admin/users/:user_id/monthly-budget', action: 'admin.platform.manage', scoped: false },
  { method: 'POST', path: '/dashboard/admin/users/:user_id/billing-config', action: 'admin.platform.manage', scoped: false },
  { method: 'GET', path: '/dashboard/admin/organisations', action: 'admin.platform.manage', scoped: false },
  { method: 'POST', path: '/dashboard/admin/organisations', action: 'admin.platform.manage', scoped: false },
  { method: 'POST', path: '/dashboard/admin/organisations/merge', action: 'admin.platform.manage', scoped: false },
  { method: 'GET', path: '/dashboard/admin/organisations/:org_id/merge-data', action: 'admin.platform.manage', scoped: false },
  { method: 'POST', path: '/dashboard/admin/organisations/:org_id', action: 'admin.platform.manage', scoped: false },
  { method: 'DELETE', path: '/dashboard/admin/organisations/:org_id', action: 'admin.platform.manage', scoped: false },
  { method: 'GET', path: '/dashboard/admin/departments', action: 'admin.organisation.manage', scoped: true },
  { method: 'POST', path: '/dashboard/admin/departments', action: 'admin.organisation.manage', scoped: true },
  { method: 'POST', path: '/dashboard/admin/departments/:department_id', action: 'admin.organisation.manage', scoped: true },
  { method: 'POST', path: '/dashboard/admin/departments/:department_id/delete', action: 'admin.organisation.manage', scoped: true },
  { method: 'DELETE', path: '/dashboard/admin/departments/:department_id', action: 'admin.organisation.manage', scoped: true },
  { method: 'GET', path: '/dashboard/admin/promotions', action: 'admin.platform.manage', scoped: false },
  { method: 'POST', path: '/dashboard/admin/promotions/create', action: 'admin.platform.manage', scoped: false },
  { method: 'POST', path: '/dashboard/admin/promotions/:grant_id/update', action: 'admin.platform.manage', scoped: false },
  { method: 'GET', path: '/dashboard/admin/projects', action: 'admin.view', scoped: true },
  { method: 'GET', path: '/dashboard/admin/api/key-rate-limit-state', action: 'admin.view', scoped: true },
  { method: 'GET', path: '/dashboard/admin/api/usage', action: 'admin.view', scoped: true },
  { method: 'GET', path: '/dashboard/admin/api/dashboard', action: 'admin.view', scoped: true },
  { method: 'GET', path: '/dashboard/admin', action: 'admin.view', scoped: true },
  { method: 'GET', path: '/dashboard/admin/api/proxy-health', action: 'admin.platform.manage', scoped: false },
  { method: 'GET', path: '/api/admin/token-logs', action: 'admin.platform.manage', scoped: false },
  { method: 'GET', path: '/dashboard/admin/conversations', action: 'admin.view', scoped: true },
  { method: 'GET', path: '/dashboard/admin/conversations/:conv_id', action: 'admin.view', scoped: true },
  { method: 'DELETE', path: '/api/admin/conversations/:conv_id', action: 'admin.organisation.manage', scoped: true },
  { method: 'POST', path: '/dashboard/admin/conversations/:conv_id/delete', action: 'admin.organisation.manage', scoped: true },
  { method: 'GET', path: '/dashboard/admin/models', action: 'admin.platform.manage', scoped: false },
  { method: 'GET', path: '/dashboard/admin/prices', action: 'admin.platform.manage', scoped: false },
  { method: 'POST', path: '/dashboard/admin/prices', action: 'admin.platform.manage', scoped: false },
  { method: 'POST', path: '/dashboard/admin/providers', action: 'admin.platform.manage', scoped: false },
  { method: 'POST', path: '/dashboard/admin/providers/:provider_id/update', action: 'admin.platform.manage', scoped: false },
  { method: 'POST', path: '/dashboard/admin/providers/:provider_id/delete', action: 'admin.platform.manage', scoped: false },
  { method: 'POST', path: '/dashboard/admin/organisation/billing-user', action: 'billing.organisation.manage', scoped: true },
  { method: 'POST', path: '/dashboard/admin/organisation/monthly-budget', action: 'billing.organisation.manage', scoped: true },
  { method: 'POST', path: '/dashboard/admin/organisation/settings', action: 'billing.organisation.manage', scoped: true },
  { method: 'POST', path: '/dashboard/admin/autorouter/api-key', action: 'autorouter.override', scoped: true },
  { method: 'POST', path: '/dashboard/admin/autorouter/org', action: 'autorouter.organisation', scoped: true },
];

/** Registers an admin route behind the guard its table entry names. */
export function adminRoute(router: Router, method: AdminRoute['method'], path: string, ...handlers: RequestHandler[]): void {
  const entry = adminRoutes.find((r) => r.method === method && r.path === path);
  if (!entry) throw new Error(`admin route ${method} ${path} is not in the permission table (portal/src/features/admin/route-table.ts)`);
  const verb = method === 'GET' ? 'get' : method === 'POST' ? 'post' : 'delete';
  router[verb](path, requireAction(entry.action), ...handlers);
}
