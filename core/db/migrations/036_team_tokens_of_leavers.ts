import type { Knex } from 'knex';

/**
 * Applies, once, to what is already stored the rule that a team (department) token stays with its
 * team's organisation when the person who issued it leaves for another, revoked there
 * (core/identity/administration.ts placeInOrganisation): before it, such a token followed its
 * issuer into the new organisation, whose administrators then managed it, while the old
 * organisation could not even delete the department (outside probe).
 *
 * Tokens whose issuer is no longer in the team's organisation are revoked; every team token is
 * given back its team's organisation. Gateways learn of the revocations as their cached key records
 * expire (within ten minutes): a migration has no store to announce them on.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    update api_keys k set status = 'revoked', revoked_at = now(), updated_at = now()
    from departments d, users u
    where k.kind = 'token' and k.metadata->>'department_id' = d.id::text and u.id = k.owner_user_id
      and u.organisation_id is distinct from d.organisation_id and k.status <> 'revoked'`);
  await knex.raw(`
    update api_keys k set organisation_id = d.organisation_id, updated_at = now()
    from departments d
    where k.kind = 'token' and k.metadata->>'department_id' = d.id::text and k.organisation_id is distinct from d.organisation_id`);
}

/** Nothing to undo: the revocations stand (a token's secret cannot be handed back). */
export async function down(): Promise<void> {}
