// Projects (docs/projects.md): named groups of people in one organisation whose API tokens are
// paid by the project's own wallet (payer `project:<id>`, the gateway API's first effective
// payer). The rules of who sees which project live here, once:
// - the admin view (`projectAdminScope`): owners and platform admins every organisation (or the
//   one they chose), org admins their organisation, department admins the projects they created
//   or belong to, anyone below: nothing;
// - a user's own view: the projects they created or belong to.
import type { Knex } from 'knex';
import { ApiError } from '../errors/index.js';
import { roleAtLeast, type Principal } from '../identity/roles.js';
import { USAGE_TABLE } from '../usage/rollup.js';

/** How a project's wallet is named as a payer: `project:<id>`, the wallet its tokens are charged to. */
export const projectPayerPrefix = 'project:';
export const projectPayerId = (projectId: number | string) => `${projectPayerPrefix}${projectId}`;
/** A SQL LIKE pattern of every project's payer id: a key paid by a project is a project token. */
export const projectPayerPattern = `${projectPayerPrefix}%`;

/** A project as pages and JSON show it. */
export interface ProjectView {
  id: number;
  name: string;
  description: string | null;
  organisation_id: number;
  organisation_name: string;
  department_id: number | null;
  department_name: string | null;
  created_by: number | null;
  created_by_email: string | null;
  created_at: string;
  members: number;
  active_tokens: number;
  payer_id: string;
  balance_usd: number;
  spent_this_month_usd: number;
}

/** Which projects a list holds. */
export type ProjectScope =
  | { kind: 'all'; organisationId?: number }
  | { kind: 'organisation'; organisationId: number }
  /** Projects the user created or belongs to. */
  | { kind: 'involved'; userId: number }
  | { kind: 'nobody' };

/** The admin view's scope for `actor` (the seed's rule for `/dashboard/admin/projects`). */
export function projectAdminScope(actor: Principal & { id: number }, chosenOrganisationId?: number): ProjectScope {
  if (roleAtLeast(actor.role, 'platform_admin'))
    return chosenOrganisationId === undefined ? { kind: 'all' } : { kind: 'all', organisationId: chosenOrganisationId };
  if (actor.role === 'org_admin' && actor.organisationId !== null) return { kind: 'organisation', organisationId: actor.organisationId };
  if (actor.role === 'department_admin') return { kind: 'involved', userId: actor.id };
  return { kind: 'nobody' };
}

interface Row {
  id: number;
  name: string;
  description: string | null;
  organisation_id: number;
  organisation_name: string;
  department_id: number | null;
  department_name: string | null;
  created_by: number | null;
  created_by_email: string | null;
  created_at: Date | string;
}

/** Projects with their organisation, department and creator: the columns of a `Row`. */
const projectRows = (knex: Knex) =>
  knex('projects as p')
    .join('organisations as o', 'o.id', 'p.organisation_id')
    .leftJoin('departments as d', 'd.id', 'p.department_id')
    .leftJoin('users as c', 'c.id', 'p.created_by')
    .select(
      'p.id',
      'p.name',
      'p.description',
      'p.organisation_id',
      'o.name as organisation_name',
      'p.department_id',
      'd.name as department_name',
      'p.created_by',
      'c.email as created_by_email',
      'p.created_at',
    );

/** Projects in the scope, newest first, with members, live tokens, balance and this month's spend. */
export async function listProjects(knex: Knex, scope: ProjectScope, now: Date, limit = 200): Promise<ProjectView[]> {
  if (scope.kind === 'nobody') return [];
  let q = projectRows(knex).orderBy('p.id', 'desc').limit(limit);
  if (scope.kind === 'all' && scope.organisationId !== undefined) q = q.where('p.organisation_id', scope.organisationId);
  if (scope.kind === 'organisation') q = q.where('p.organisation_id', scope.organisationId);
  if (scope.kind === 'involved') {
    const userId = scope.userId;
    q = q.where((w) =>
      w
        .where('p.created_by', userId)
        .orWhereExists(knex('project_members as m').whereRaw('m.project_id = p.id').andWhere('m.user_id', userId)),
    );
  }
  return withFigures(knex, (await q) as Row[], now);
}

/** Adds members, tokens, balance and month's spend to project rows (four grouped queries in all). */
async function withFigures(knex: Knex, rows: Row[], now: Date): Promise<ProjectView[]> {
  if (rows.length === 0) return [];
  const ids = rows.map((r) => r.id);
  const payers = ids.map(projectPayerId);
  const monthStart = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString();
  const [members, tokens, balances, spend] = await Promise.all([
    knex('project_members').whereIn('project_id', ids).groupBy('project_id').select('project_id').count({ n: '*' }),
    knex('api_keys').whereIn('payer_id', payers).whereNot({ status: 'revoked' }).groupBy('payer_id').select('payer_id').count({ n: '*' }),
    knex('wallet_entries')
      .whereIn('payer_id', payers)
      .groupBy('payer_id')
      .select('payer_id')
      .sum({ nano: knex.raw('coalesce(amount_nano, amount_micro * 1000)') }),
    knex(`${USAGE_TABLE} as u`)
      .join('api_keys as k', 'k.id', 'u.key_id')
      .whereIn('k.payer_id', payers)
      .andWhere('u.hour', '>=', monthStart)
      .groupBy('k.payer_id')
      .select('k.payer_id')
      .sum({ usd: 'u.cost_usd' }),
  ]);
  const byId = (list: object[], key: string, value: string) =>
    new Map((list as Record<string, unknown>[]).map((r) => [String(r[key]), Number(r[value] ?? 0)]));
  const memberCount = byId(members, 'project_id', 'n');
  const tokenCount = byId(tokens, 'payer_id', 'n');
  const balance = byId(balances, 'payer_id', 'nano');
  const spent = byId(spend, 'payer_id', 'usd');
  return rows.map((r) => {
    const payer = projectPayerId(r.id);
    return {
      ...r,
      created_at: new Date(r.created_at).toISOString(),
      members: memberCount.get(String(r.id)) ?? 0,
      active_tokens: tokenCount.get(payer) ?? 0,
      payer_id: payer,
      balance_usd: (balance.get(payer) ?? 0) / 1e9,
      spent_this_month_usd: Math.round((spent.get(payer) ?? 0) * 1e9) / 1e9,
    };
  });
}

/** One project with its figures, or undefined. */
export async function findProject(knex: Knex, id: number, now: Date): Promise<ProjectView | undefined> {
  const rows = (await projectRows(knex).where('p.id', id)) as Row[];
  return (await withFigures(knex, rows, now))[0];
}

/** Whether the user is a member of the project. */
export async function isProjectMember(knex: Knex, projectId: number, userId: number): Promise<boolean> {
  return (await knex('project_members').where({ project_id: projectId, user_id: userId }).first('user_id')) !== undefined;
}

/** The project's members, by email. */
export async function projectMembers(
  knex: Knex,
  projectId: number,
): Promise<{ user_id: number; email: string; display_name: string; added_at: string }[]> {
  const rows = (await knex('project_members as m')
    .join('users as u', 'u.id', 'm.user_id')
    .where('m.project_id', projectId)
    .orderBy('u.email')
    .select('m.user_id', 'u.email', 'u.display_name', 'm.added_at')) as {
    user_id: number;
    email: string;
    display_name: string;
    added_at: Date | string;
  }[];
  return rows.map((r) => ({ ...r, added_at: new Date(r.added_at).toISOString() }));
}

/** Creates a project in the creator's organisation with the creator as its first member. */
export async function createProject(
  knex: Knex,
  input: { organisationId: number; departmentId: number | null; name: string; description: string | null; createdBy: number },
): Promise<number> {
  return knex.transaction(async (trx) => {
    const taken = await trx('projects')
      .where({ organisation_id: input.organisationId })
      .whereRaw('lower(name) = lower(?)', [input.name])
      .first('id');
    if (taken)
      throw new ApiError('conflict', { param: 'name', humanMessage: `Your organisation already has a project named “${input.name}”` });
    const [row] = (await trx('projects')
      .insert({
        organisation_id: input.organisationId,
        department_id: input.departmentId,
        name: input.name,
        description: input.description,
        created_by: input.createdBy,
      })
      .returning('id')) as { id: number }[];
    await trx('project_members').insert({ project_id: row!.id, user_id: input.createdBy, added_by: input.createdBy });
    return row!.id;
  });
}

/** Adds an active user of the project's organisation (by email); adding a member again changes nothing. */
export async function addProjectMember(knex: Knex, project: ProjectView, email: string, addedBy: number): Promise<number> {
  const user = (await knex('users')
    .whereRaw('lower(email) = lower(?)', [email])
    .whereNull('deleted_at')
    .first('id', 'organisation_id', 'status')) as { id: number; organisation_id: number | null; status: string } | undefined;
  if (!user || user.organisation_id !== project.organisation_id || user.status !== 'active')
    throw new ApiError('validation_error', {
      status: 422,
      param: 'email',
      humanMessage: `No active member of ${project.organisation_name} has the address ${email}`,
    });
  await knex('project_members')
    .insert({ project_id: project.id, user_id: user.id, added_by: addedBy })
    .onConflict(['project_id', 'user_id'])
    .ignore();
  return user.id;
}

/**
 * Removes a member; the last member stays (a project always has someone to manage its tokens).
 * The tokens they issued for it are revoked (leaveProjects). Returns those tokens' secret hashes,
 * to announce.
 */
export async function removeProjectMember(knex: Knex, projectId: number, userId: number, now: Date): Promise<string[]> {
  return knex.transaction(async (trx) => {
    const members = (await trx('project_members').where({ project_id: projectId }).forUpdate().pluck('user_id')) as number[];
    if (!members.includes(userId))
      throw new ApiError('not_found', { param: 'user_id', humanMessage: 'This user is not a member of the project' });
    if (members.length === 1)
      throw new ApiError('conflict', { humanMessage: 'A project keeps at least one member; add someone else before removing the last' });
    return leaveProjects(trx, userId, [projectId], now);
  });
}

/**
 * Takes a person out of projects: their memberships end and the tokens they issued for those
 * projects are revoked. A token's secret was shown to its issuer alone, so one left working would
 * let someone no longer in the project — or no longer in its organisation — go on spending the
 * project's wallet (outside probe: after a move to another organisation that organisation's
 * administrators could even manage it). Returns the revoked tokens' secret hashes, to announce.
 */
export async function leaveProjects(trx: Knex, userId: number, projectIds: number[], now: Date): Promise<string[]> {
  if (projectIds.length === 0) return [];
  await trx('project_members').where({ user_id: userId }).whereIn('project_id', projectIds).delete();
  const revoked = (await trx('api_keys')
    .where({ owner_user_id: userId })
    .whereIn('payer_id', projectIds.map(projectPayerId))
    .whereNot({ status: 'revoked' })
    .update({ status: 'revoked', revoked_at: now, updated_at: now })
    .returning('secret_hash')) as { secret_hash: string }[];
  return revoked.map((k) => k.secret_hash);
}

/** The projects of organisations other than `organisationId` a person belongs to (all of them for `null`). */
export async function projectsOutside(trx: Knex, userId: number, organisationId: number | null): Promise<number[]> {
  const query = trx('project_members as m').join('projects as p', 'p.id', 'm.project_id').where('m.user_id', userId);
  if (organisationId !== null) query.whereNot('p.organisation_id', organisationId);
  return (await query.pluck('p.id')) as number[];
}
