import { describe, expect, it } from 'vitest';
import { isAllowed, roleAtLeast, type Principal } from './roles.js';

const user = (role: Principal['role'], extra: Partial<Principal> = {}): Principal => ({
  id: 1,
  role,
  status: 'active',
  organisationId: 10,
  departmentId: 100,
  ...extra,
});

describe('isAllowed', () => {
  it('ranks owner > platform_admin > org_admin > department_admin > member', () => {
    expect(roleAtLeast('owner', 'platform_admin')).toBe(true);
    expect(roleAtLeast('org_admin', 'platform_admin')).toBe(false);
    expect(roleAtLeast('department_admin', 'member')).toBe(true);
  });

  it('refuses an action below its minimum role', () => {
    expect(isAllowed(user('member'), 'admin.view')).toBe(false);
    expect(isAllowed(user('department_admin'), 'admin.view')).toBe(true);
    expect(isAllowed(user('org_admin'), 'admin.platform.manage')).toBe(false);
    expect(isAllowed(user('platform_admin'), 'admin.owner.manage')).toBe(false);
    expect(isAllowed(user('owner'), 'admin.owner.manage')).toBe(true);
  });

  it('refuses everything to a suspended or archived account', () => {
    expect(isAllowed(user('owner', { status: 'suspended' }), 'dashboard.view')).toBe(false);
    expect(isAllowed(user('member', { status: 'archived' }), 'dashboard.view')).toBe(false);
  });

  it('scopes admins to their organisation or department', () => {
    const inOrg = { organisationId: 10, departmentId: 200 };
    const otherOrg = { organisationId: 11, departmentId: 100 };
    expect(isAllowed(user('org_admin'), 'admin.users.manage', inOrg)).toBe(true);
    expect(isAllowed(user('org_admin'), 'admin.users.manage', otherOrg)).toBe(false);
    expect(isAllowed(user('department_admin'), 'admin.users.manage', inOrg)).toBe(false);
    expect(isAllowed(user('department_admin'), 'admin.users.manage', { organisationId: 10, departmentId: 100 })).toBe(true);
    expect(isAllowed(user('platform_admin'), 'admin.users.manage', otherOrg)).toBe(true);
    expect(isAllowed(user('member'), 'profile.update', { organisationId: 10, departmentId: 100, userId: 1 })).toBe(true);
    expect(isAllowed(user('member'), 'profile.update', { organisationId: 10, departmentId: 100, userId: 2 })).toBe(false);
  });
});
