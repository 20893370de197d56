// Whose requests a portal user may see in usage and the request log: the requests of the keys
// they may see (the same filters as the key list: their own keys, their department's, their
// organisation's, or every key). One subquery, applied in SQL, so no page can widen it.
import type { Knex } from 'knex';

/** Filters on api_keys; none = every key (platform administrators and owners). */
export interface KeyScope {
  ownerUserId?: number;
  organisationId?: number;
  ownerDepartmentId?: number;
}

/** `select id from api_keys where <scope>`, for `whereIn('key_id', …)`. */
export function keysInScope(knex: Knex, scope: KeyScope): Knex.QueryBuilder {
  let keys = knex('api_keys').select('id');
  if (scope.ownerUserId !== undefined) keys = keys.where({ owner_user_id: scope.ownerUserId });
  if (scope.organisationId !== undefined) keys = keys.where({ organisation_id: scope.organisationId });
  if (scope.ownerDepartmentId !== undefined) {
    const department = scope.ownerDepartmentId;
    keys = keys.whereIn('owner_user_id', (q) => q.select('id').from('users').where({ department_id: department }));
  }
  return keys;
}

/** Whether the scope is every key (no filter at all). */
export const isEveryKey = (scope: KeyScope) =>
  scope.ownerUserId === undefined && scope.organisationId === undefined && scope.ownerDepartmentId === undefined;
