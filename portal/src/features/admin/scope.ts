// The keys an administrator's views cover: the same reach as their user list (core/identity's
// userScopeOf), as key filters — an organisation's admins their organisation's keys, department
// admins their department's, platform admins every key or the organisation they chose.
import type { Request } from 'express';
import { userScopeOf } from '../../../../core/identity/index.js';
import type { KeyScope } from '../../../../core/usage/index.js';

export function adminKeyScope(req: Request): KeyScope {
  const scope = userScopeOf(req.user!, req.session?.adminOrgId);
  if (scope.nobody) return { ownerUserId: -1 };
  return {
    ...(scope.organisationId !== undefined && { organisationId: scope.organisationId }),
    ...(scope.departmentId !== undefined && { ownerDepartmentId: scope.departmentId }),
  };
}
