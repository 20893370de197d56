import type { Knex } from 'knex';

/**
 * Applies, once, to what is already stored the rule that a member who leaves a project leaves
 * their tokens for it behind, revoked (core/projects/projects.ts leaveProjects): before it, a
 * member removed from a project kept a working token that spent the project's wallet, and a
 * member moved to another organisation took their project tokens — and their memberships — along,
 * where that organisation's administrators could see and change them (outside probe).
 *
 * In order: memberships of people no longer in the project's organisation end; project tokens
 * return to their project's organisation; tokens whose issuer is not a member of their project
 * are revoked. Tokens issued by no one in particular (the Management API's) are left as they are.
 * Gateways learn of the revocations as their cached key records expire (within ten minutes,
 * core/keys/change-feed.ts keyCacheTtlMs): a migration has no store to announce them on.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    delete from project_members m
    using projects p, users u
    where m.project_id = p.id and u.id = m.user_id and u.organisation_id is distinct from p.organisation_id`);
  await knex.raw(`
    update api_keys k set organisation_id = p.organisation_id, updated_at = now()
    from projects p
    where k.payer_id = 'project:' || p.id and k.organisation_id is distinct from p.organisation_id`);
  await knex.raw(`
    update api_keys k set status = 'revoked', revoked_at = now(), updated_at = now()
    from projects p
    where k.payer_id = 'project:' || p.id and k.status <> 'revoked' and k.owner_user_id is not null
      and not exists (select 1 from project_members m where m.project_id = p.id and m.user_id = k.owner_user_id)`);
}

/** Nothing to undo: the revocations stand (a token's secret cannot be handed back). */
export async function down(): Promise<void> {}
