// An organisation's departments (teams): what department admins manage, what invites, projects and
// API tokens name. Org admins keep their own organisation's; platform admins any organisation's.
// A department is deleted only when nothing live still points at it, so no user, invite or token
// is left naming a team that no longer exists.
import type { Knex } from 'knex';
import { ApiError } from '../errors/index.js';

/** A department as the admin pages show it. */
export interface DepartmentView {
  id: number;
  organisation_id: number;
  organisation_name: string;
  name: string;
  /** Live (not deleted) users in it. */
  members: number;
  created_at: string;
}

type ViewRow = Omit<DepartmentView, 'members' | 'created_at'> & { members: string | number; created_at: Date };

const selectViews = (knex: Knex) =>
  knex('departments as d')
    .join('organisations as o', 'o.id', 'd.organisation_id')
    .select('d.id', 'd.organisation_id', 'o.name as organisation_name', 'd.name', 'd.created_at')
    .select(knex('users as u').count('*').where('u.department_id', knex.ref('d.id')).whereNull('u.deleted_at').as('members'));

const present = (r: ViewRow): DepartmentView => ({ ...r, members: Number(r.members), created_at: new Date(r.created_at).toISOString() });

/** Departments of one organisation, or of every organisation (`undefined`), by organisation then name. */
export async function listDepartments(knex: Knex, organisationId: number | undefined): Promise<DepartmentView[]> {
  let query = selectViews(knex)
    .orderBy([{ column: 'o.name' }, { column: 'd.name' }, { column: 'd.id' }])
    .limit(1_000);
  if (organisationId !== undefined) query = query.where('d.organisation_id', organisationId);
  return ((await query) as ViewRow[]).map(present);
}

/** One department as the pages show it, or null. */
export async function viewDepartment(knex: Knex, id: number): Promise<DepartmentView | null> {
  const row = (await selectViews(knex).where('d.id', id).first()) as ViewRow | undefined;
  return row ? present(row) : null;
}

/** The department with this id, or undefined. */
export async function findDepartment(knex: Knex, id: number): Promise<{ id: number; organisation_id: number; name: string } | undefined> {
  return (await knex('departments').where({ id }).first('id', 'organisation_id', 'name')) as
    { id: number; organisation_id: number; name: string } | undefined;
}

const nameTaken = (name: string) =>
  new ApiError('conflict', { param: 'name', humanMessage: `The organisation already has a department named "${name}"` });

/** Creates a department; a name the organisation already uses (any case) is 409. */
export async function createDepartment(knex: Knex, organisationId: number, name: string, now: Date): Promise<number> {
  return knex.transaction(async (trx) => {
    const organisation = (await trx('organisations').where({ id: organisationId }).forUpdate().first('id')) as { id: number } | undefined;
    if (!organisation) throw new ApiError('not_found', { param: 'org_id', humanMessage: `There is no organisation ${organisationId}` });
    if (await sameName(trx, organisationId, name)) throw nameTaken(name);
    const [row] = (await trx('departments').insert({ organisation_id: organisationId, name, created_at: now }).returning('id')) as {
      id: number;
    }[];
    return row!.id;
  });
}

/** Renames a department within its organisation (409 for a name in use). */
export async function renameDepartment(knex: Knex, id: number, name: string): Promise<void> {
  await knex.transaction(async (trx) => {
    const department = (await trx('departments').where({ id }).forUpdate().first('organisation_id')) as
      { organisation_id: number } | undefined;
    if (!department) throw noSuchDepartment();
    // The organisation's row orders renames and creations, so two cannot take one name together.
    await trx('organisations').where({ id: department.organisation_id }).forUpdate().first('id');
    if (await sameName(trx, department.organisation_id, name, id)) throw nameTaken(name);
    await trx('departments').where({ id }).update({ name });
    // Team tokens carry their team's name (api-tokens): it follows the department's.
    await trx('api_keys')
      .where({ kind: 'token' })
      .whereRaw("metadata->>'department_id' = ?", [String(id)])
      .update({ metadata: trx.raw("jsonb_set(metadata, '{team}', to_jsonb(?::text))", [name]) });
  });
}

/**
 * Deletes a department nothing live names: its members, pending invites and live API tokens must
 * move or go first (409 says which). Deleted (anonymised) users are detached; projects forget it.
 */
export async function deleteDepartment(knex: Knex, id: number, now: Date): Promise<void> {
  await knex.transaction(async (trx) => {
    const department = (await trx('departments').where({ id }).forUpdate().first('id')) as { id: number } | undefined;
    if (!department) throw noSuchDepartment();
    const count = async (q: Knex.QueryBuilder) => Number(((await q.count({ n: '*' }).first()) as { n: string | number }).n);
    const members = await count(trx('users').where({ department_id: id }).whereNull('deleted_at'));
    const invites = await count(trx('invites').where({ department_id: id, status: 'pending' }).where('expires_at', '>', now));
    const tokens = await count(
      trx('api_keys')
        .where({ kind: 'token' })
        .whereNot({ status: 'revoked' })
        .whereRaw("metadata->>'department_id' = ?", [String(id)]),
    );
    const left = [
      members > 0 && `${members} member${members === 1 ? '' : 's'}`,
      invites > 0 && `${invites} pending invite${invites === 1 ? '' : 's'}`,
      tokens > 0 && `${tokens} live API token${tokens === 1 ? '' : 's'}`,
    ].filter(Boolean);
    if (left.length > 0)
      throw new ApiError('conflict', {
        humanMessage: `The department still has ${left.join(', ')}: move or end them first`,
        details: { members, pending_invites: invites, live_tokens: tokens },
      });
    await trx('users').where({ department_id: id }).update({ department_id: null });
    await trx('invites').where({ department_id: id }).update({ department_id: null });
    await trx('departments').where({ id }).delete();
  });
}

async function sameName(knex: Knex, organisationId: number, name: string, except?: number): Promise<boolean> {
  let query = knex('departments').where({ organisation_id: organisationId }).whereRaw('lower(name) = lower(?)', [name]);
  if (except !== undefined) query = query.whereNot({ id: except });
  return (await query.first('id')) !== undefined;
}

/** 404 for a department that does not exist or is outside the caller's reach (they look the same). */
export function noSuchDepartment(): ApiError {
  return new ApiError('not_found', { param: 'department_id', humanMessage: 'There is no such department' });
}
