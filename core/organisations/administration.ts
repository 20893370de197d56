// Organisations for platform administrators (docs/administration.md "Organisations"): the list
// with its figures, create, update, delete, and merge — one transaction that moves members,
// departments, keys, invites and who pays into the target and removes the sources, so a failure
// part-way leaves nothing changed.
import type { Knex } from 'knex';
import { repointPortalKeys } from '../billing/organisation.js';
import { nanoPerUsd } from '../budget/usage.js';
import { spendGroupWindow } from '../budget/spend-groups.js';
import { ApiError } from '../errors/index.js';
import { roleRank, type Principal, type Role } from '../identity/roles.js';
import type { Store } from '../store/index.js';
import { USAGE_TABLE } from '../usage/rollup.js';

/** An organisation with the figures of the admin list. */
export interface OrganisationSummary {
  id: number;
  name: string;
  slug: string;
  billing_exempt: boolean;
  monthly_budget_usd: number | null;
  billing_user_id: number | null;
  members: number;
  active_keys: number;
  /** What its members' keys spent this UTC month, USD. */
  spend_this_month_usd: number;
  /** The sum of its members' wallet balances, USD. */
  balance_usd: number;
  created_at: string;
}

type Counted = { organisation_id: number | null; n: string | number | null };
const byOrganisation = (rows: Counted[]) => new Map(rows.map((r) => [r.organisation_id, Number(r.n ?? 0)]));

/** Every organisation (or one) with its figures, by name. Four grouped queries, whatever the count. */
export async function listOrganisations(knex: Knex, now: Date, only?: number): Promise<OrganisationSummary[]> {
  const monthStart = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString();
  const scoped = <T extends Knex.QueryBuilder>(q: T, column: string): T => (only === undefined ? q : (q.where(column, only) as T));
  const [organisations, members, keys, spend, balances] = await Promise.all([
    scoped(knex('organisations').orderBy('name').select('*'), 'id') as Promise<Record<string, unknown>[]>,
    scoped(knex('users').whereNull('deleted_at').groupBy('organisation_id').select('organisation_id').count({ n: '*' }), 'organisation_id'),
    scoped(
      knex('api_keys').whereNot({ status: 'revoked' }).groupBy('organisation_id').select('organisation_id').count({ n: '*' }),
      'organisation_id',
    ),
    scoped(
      knex(`${USAGE_TABLE} as u`)
        .join('api_keys as k', 'k.id', 'u.key_id')
        .where('u.hour', '>=', monthStart)
        .groupBy('k.organisation_id')
        .select('k.organisation_id')
        .sum({ n: knex.raw('round(u.cost_usd * 1000000000)') }),
      'k.organisation_id',
    ),
    scoped(
      knex('users as m')
        .join('wallet_entries as w', 'w.payer_id', knex.raw("'user:' || m.id"))
        .groupBy('m.organisation_id')
        .select('m.organisation_id')
        .sum({ n: knex.raw('coalesce(w.amount_nano, w.amount_micro * 1000)') }),
      'm.organisation_id',
    ),
  ]);
  const [memberCount, keyCount, spendNano, balanceNano] = [members, keys, spend, balances].map((rows) => byOrganisation(rows as Counted[]));
  return organisations.map((o) => {
    const id = Number(o.id);
    return {
      id,
      name: String(o.name),
      slug: String(o.slug),
      billing_exempt: Boolean(o.billing_exempt),
      monthly_budget_usd: o.monthly_budget === null ? null : Number(o.monthly_budget),
      billing_user_id: (o.billing_user_id as number | null) ?? null,
      members: memberCount!.get(id) ?? 0,
      active_keys: keyCount!.get(id) ?? 0,
      spend_this_month_usd: (spendNano!.get(id) ?? 0) / nanoPerUsd,
      balance_usd: (balanceNano!.get(id) ?? 0) / nanoPerUsd,
      created_at: new Date(o.created_at as Date).toISOString(),
    };
  });
}

/** Lower-case letters, digits and dashes from a name ("Acme Ltd." → "acme-ltd"). */
export function slugFrom(name: string): string {
  return (
    name
      .normalize('NFKD')
      .replace(/[\u0300-\u036f]/g, '')
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 100) || 'organisation'
  );
}

/** A slug in use is a conflict naming the field, not a database error. */
async function assertSlugFree(knex: Knex, slug: string, except?: number): Promise<void> {
  const taken = await knex('organisations')
    .where({ slug })
    .modify((q) => {
      if (except !== undefined) q.whereNot({ id: except });
    })
    .first('id');
  if (taken) throw new ApiError('conflict', { param: 'slug', humanMessage: `The slug "${slug}" is already used by another organisation` });
}

/**
 * The slug made from a name, with the first free `-2`, `-3`… suffix when another organisation has
 * it: two "Acme" organisations, or names with no Latin letters ("日本株式会社" → "organisation"),
 * must not fail over a slug nobody typed.
 */
async function freeSlugFrom(knex: Knex, name: string): Promise<string> {
  const base = slugFrom(name).slice(0, 90);
  const taken = new Set(
    ((await knex('organisations').where('slug', base).orWhere('slug', 'like', `${base}-%`).select('slug')) as { slug: string }[]).map(
      (r) => r.slug,
    ),
  );
  if (!taken.has(base)) return base;
  for (let n = 2; ; n++) if (!taken.has(`${base}-${n}`)) return `${base}-${n}`;
}

/** Creates an organisation; the slug defaults to one made from the name (free, see freeSlugFrom). */
export async function createOrganisation(knex: Knex, input: { name: string; slug?: string | undefined }, now: Date): Promise<number> {
  const slug = input.slug ?? (await freeSlugFrom(knex, input.name));
  await assertSlugFree(knex, slug);
  const [row] = (await knex('organisations').insert({ name: input.name, slug, created_at: now }).returning('id')) as { id: number }[];
  return row!.id;
}

/** Fields an update may change (undefined = unchanged; a null budget = none). */
export interface OrganisationPatch {
  name?: string;
  slug?: string;
  billing_exempt?: boolean;
  monthly_budget?: number | null;
}

/**
 * Updates an organisation. Returns the hashes of keys whose payer changed (billing exemption
 * changes who pays), for the caller to announce.
 */
export async function updateOrganisation(knex: Knex, id: number, patch: OrganisationPatch): Promise<string[]> {
  if (patch.slug !== undefined) await assertSlugFree(knex, patch.slug, id);
  return knex.transaction(async (trx) => {
    const changes = {
      ...(patch.name !== undefined && { name: patch.name }),
      ...(patch.slug !== undefined && { slug: patch.slug }),
      ...(patch.billing_exempt !== undefined && { billing_exempt: patch.billing_exempt }),
      ...(patch.monthly_budget !== undefined && { monthly_budget: patch.monthly_budget === null ? null : patch.monthly_budget.toFixed(6) }),
    };
    const found = await trx('organisations').where({ id }).forUpdate().first('id');
    if (!found) throw new ApiError('not_found', { param: 'org_id', humanMessage: 'There is no such organisation' });
    if (Object.keys(changes).length > 0) await trx('organisations').where({ id }).update(changes);
    return patch.billing_exempt === undefined ? [] : repointPortalKeys(trx, { organisationId: id });
  });
}

/**
 * Deletes an organisation that has no users (hard-deleted accounts do not count: their
 * tombstones are detached). Its departments and invites go with it; keys left from former
 * members lose the organisation.
 */
export async function deleteOrganisation(knex: Knex, id: number): Promise<void> {
  await knex.transaction(async (trx) => {
    const found = await trx('organisations').where({ id }).forUpdate().first('id');
    if (!found) throw new ApiError('not_found', { param: 'org_id', humanMessage: 'There is no such organisation' });
    const [users] = await trx('users').where({ organisation_id: id }).whereNull('deleted_at').count({ n: '*' });
    const count = Number((users as { n: string | number }).n);
    if (count > 0)
      throw new ApiError('conflict', {
        humanMessage: `The organisation still has ${count} user${count === 1 ? '' : 's'}: move or delete them first`,
      });
    await trx('users').where({ organisation_id: id }).update({ organisation_id: null, department_id: null });
    await trx('api_keys').where({ organisation_id: id }).update({ organisation_id: null });
    await trx('autorouter_policies')
      .where({ layer: 'organisation', subject: String(id) })
      .delete();
    await trx('organisations').where({ id }).delete();
  });
}

/** What the merge dialog needs of one organisation. */
export async function mergeData(
  knex: Knex,
  id: number,
): Promise<{
  organisation_id: number;
  name: string;
  billing_user_id: number | null;
  members: { id: number; email: string; display_name: string; role: Role }[];
}> {
  const organisation = (await knex('organisations').where({ id }).first('id', 'name', 'billing_user_id')) as
    { id: number; name: string; billing_user_id: number | null } | undefined;
  if (!organisation) throw new ApiError('not_found', { param: 'org_id', humanMessage: 'There is no such organisation' });
  const members = (await knex('users')
    .where({ organisation_id: id })
    .whereNull('deleted_at')
    .orderBy('id')
    .select('id', 'email', 'display_name', 'role')) as { id: number; email: string; display_name: string; role: Role }[];
  return { organisation_id: organisation.id, name: organisation.name, billing_user_id: organisation.billing_user_id, members };
}

/** A merge request, already parsed. */
export interface MergeRequest {
  targetId: number;
  sourceIds: number[];
  /** Who pays for the merged organisation; undefined keeps the target's. */
  billingUserId?: number | null;
  /** New roles of members (`role_{user_id}` fields). */
  roles: Map<number, Role>;
}

/** What a merge changed: the keys to announce, and the members it moved or gave another role. */
export interface MergeResult {
  hashes: string[];
  movedMembers: { userId: number; from: number; to: number }[];
  roleChanges: { userId: number; from: Role; to: Role }[];
}

/**
 * Merges the sources into the target in one transaction: members, departments, keys and pending
 * invites move; the sources' autorouter policies go; roles are set as asked (never above the
 * actor's); the billing user is set and every member's keys re-pointed to who now pays; the
 * sources are deleted. Returns the hashes of every key that moved or changed payer, to announce,
 * and every member whose organisation or role changed, for their activity log.
 * The target keeps its own name, slug and monthly budget.
 */
export async function mergeOrganisations(knex: Knex, actor: Principal, request: MergeRequest): Promise<MergeResult> {
  const { targetId, sourceIds } = request;
  if (sourceIds.length === 0 || sourceIds.includes(targetId) || new Set(sourceIds).size !== sourceIds.length)
    throw new ApiError('validation_error', {
      status: 422,
      param: 'source_org_ids',
      humanMessage: 'Name one or more other organisations to merge, each once, not the target',
    });
  for (const role of request.roles.values())
    if (roleRank(role) > roleRank(actor.role))
      throw new ApiError('forbidden', { humanMessage: `You cannot give a role above your own (${actor.role})` });
  return knex.transaction(async (trx) => {
    const all = [targetId, ...sourceIds];
    const found = (await trx('organisations').whereIn('id', all).forUpdate().pluck('id')) as number[];
    const missing = all.filter((id) => !found.includes(id));
    if (missing.length > 0)
      throw new ApiError('not_found', {
        param: missing.includes(targetId) ? 'target_org_id' : 'source_org_ids',
        humanMessage: `No such organisation: ${missing.join(', ')}`,
      });
    const moved = (await trx('api_keys').whereIn('organisation_id', sourceIds).pluck('secret_hash')) as string[];
    const members = (await trx('users')
      .whereIn('organisation_id', sourceIds)
      .whereNull('deleted_at')
      .orderBy('id')
      .select('id as userId', 'organisation_id as from')) as { userId: number; from: number }[];
    const movedMembers = members.map((m) => ({ ...m, to: targetId }));
    const roleChanges: MergeResult['roleChanges'] = [];
    await trx('users').whereIn('organisation_id', sourceIds).update({ organisation_id: targetId });
    await moveRenamingClashes(trx, 'departments', sourceIds, targetId);
    await trx('api_keys').whereIn('organisation_id', sourceIds).update({ organisation_id: targetId, updated_at: trx.fn.now() });
    await trx('invites').whereIn('organisation_id', sourceIds).update({ organisation_id: targetId });
    await moveRenamingClashes(trx, 'projects', sourceIds, targetId);
    await trx('autorouter_policies').where({ layer: 'organisation' }).whereIn('subject', sourceIds.map(String)).delete();
    for (const [userId, role] of request.roles) {
      const member = (await trx('users')
        .where({ id: userId, organisation_id: targetId })
        .whereNull('deleted_at')
        .first('role', 'status')) as { role: Role; status: string } | undefined;
      if (!member)
        throw new ApiError('validation_error', {
          status: 422,
          param: `role_${userId}`,
          humanMessage: `User ${userId} is not a member of the merged organisations`,
        });
      if (member.role === role) continue;
      // The rules of the users page's role change hold here too: nobody acts on a role above their
      // own, one's own role is changed there (with its confirmation), and an owner stays.
      if (roleRank(member.role) > roleRank(actor.role))
        throw new ApiError('forbidden', {
          param: `role_${userId}`,
          humanMessage: `User ${userId} has a role above your own (${actor.role})`,
        });
      if (userId === actor.id)
        throw new ApiError('forbidden', {
          param: `role_${userId}`,
          humanMessage: 'Change your own role on the users page, not in a merge',
        });
      if (member.role === 'owner' && member.status === 'active') {
        const others = await trx('users').where({ role: 'owner', status: 'active' }).whereNot({ id: userId }).first('id');
        if (!others)
          throw new ApiError('conflict', {
            param: `role_${userId}`,
            humanMessage: 'This is the last active owner: make someone else an owner first',
          });
      }
      await trx('users').where({ id: userId }).update({ role });
      roleChanges.push({ userId, from: member.role, to: role });
    }
    if (request.billingUserId !== undefined) {
      if (request.billingUserId !== null) {
        const nominee = await trx('users').where({ id: request.billingUserId, organisation_id: targetId, status: 'active' }).first('id');
        if (!nominee)
          throw new ApiError('validation_error', {
            status: 422,
            param: 'billing_user_id',
            humanMessage: 'The billing user must be an active member of the merged organisations',
          });
      }
      await trx('organisations').where({ id: targetId }).update({ billing_user_id: request.billingUserId });
    }
    await trx('organisations').whereIn('id', sourceIds).update({ billing_user_id: null });
    const repointed = await repointPortalKeys(trx, { organisationId: targetId });
    await trx('organisations').whereIn('id', sourceIds).delete();
    return { hashes: [...new Set([...moved, ...repointed])], movedMembers, roleChanges };
  });
}

/**
 * After keys change organisation — a merge, a user moved or joining by invitation — the monthly
 * spend counters in the store of the organisations they left and joined are wrong by what those
 * keys spent: dropping them makes the gateways rebuild them from the usage rollup on the next
 * request. `null` (no organisation) has no counter.
 */
export async function forgetOrganisationCounters(store: Store, organisationIds: (number | null)[], now: Date): Promise<void> {
  const ids = [...new Set(organisationIds.filter((id): id is number => id !== null))];
  if (ids.length > 0) await store.del(...ids.map((id) => spendGroupWindow({ scope: 'organisation', id }, now).counterKey));
}

/**
 * Moves the sources' projects or departments into the target. Their names are unique within an
 * organisation whatever their case, so a moved one whose name is taken gets its former
 * organisation's name appended (and its id, should even that be taken): nothing is lost and no
 * merge fails over a name.
 */
async function moveRenamingClashes(
  trx: Knex.Transaction,
  table: 'projects' | 'departments',
  sourceIds: number[],
  targetId: number,
): Promise<void> {
  const taken = new Set(((await trx(table).where({ organisation_id: targetId }).pluck('name')) as string[]).map((n) => n.toLowerCase()));
  const moving = (await trx(`${table} as p`)
    .join('organisations as o', 'o.id', 'p.organisation_id')
    .whereIn('p.organisation_id', sourceIds)
    .orderBy('p.id')
    .select('p.id', 'p.name', 'o.name as organisation_name')) as { id: number; name: string; organisation_name: string }[];
  for (const row of moving) {
    let name = row.name;
    if (taken.has(name.toLowerCase())) name = `${row.name} (from ${row.organisation_name})`.slice(0, 200);
    if (taken.has(name.toLowerCase())) name = `${row.name} #${row.id}`.slice(0, 200);
    taken.add(name.toLowerCase());
    await trx(table)
      .where({ id: row.id })
      .update({ organisation_id: targetId, name, ...(table === 'projects' && { updated_at: trx.fn.now() }) });
  }
}
