// What a person leaves behind in an organisation they leave (placeInOrganisation), and migration
// 036 applying the team-token rule to what was stored before it — against a real migrated
// database (PostgreSQL or PGlite).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Knex } from 'knex';
import type { Database } from '../db/index.js';
import { up as applyTeamTokenRule } from '../db/migrations/036_team_tokens_of_leavers.js';
import { createTestDatabase } from '../db/testing.js';
import { placeInOrganisation } from './administration.js';

let database: Database;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database?.close();
});
const now = new Date('2026-11-28T12:00:00Z');

/** Two organisations, a department in the first, and an org admin of it with a team token, a key of their own and a pending invite. */
async function leaverWorld(knex: Knex, tag: string) {
  const [acme, beta] = (
    (await knex('organisations')
      .insert([
        { name: `Acme ${tag}`, slug: `acme-${tag}` },
        { name: `Beta ${tag}`, slug: `beta-${tag}` },
      ])
      .returning('id')) as { id: number }[]
  ).map((o) => o.id) as [number, number];
  const sales = ((await knex('departments').insert({ organisation_id: acme, name: 'Sales' }).returning('id')) as { id: number }[])[0]!.id;
  const admin = (
    (await knex('users')
      .insert({ email: `admin-${tag}@example.com`, display_name: 'Admin', organisation_id: acme, role: 'org_admin' })
      .returning('id')) as { id: number }[]
  )[0]!.id;
  const key = async (name: string, kind: string, metadata: Record<string, string>, organisationId: number) =>
    knex('api_keys').insert({
      id: `key_${tag}_${name}`,
      kind,
      name,
      secret_hash: `hash-${tag}-${name}`.padEnd(64, '0'),
      secret_hint: 'svc_…',
      source: 'portal',
      owner_user_id: admin,
      organisation_id: organisationId,
      metadata: JSON.stringify(metadata),
    });
  await key('team', 'token', { team: 'Sales', department_id: String(sales) }, acme);
  await key('own', 'key', {}, acme);
  await knex('invites').insert({
    email: `invitee-${tag}@example.com`,
    organisation_id: acme,
    role: 'org_admin',
    invited_by: admin,
    token_hash: `invite-${tag}`.padEnd(64, '0'),
    expires_at: new Date(now.getTime() + 86_400_000),
    created_at: now,
  });
  const keys = async () =>
    Object.fromEntries(
      (
        (await knex('api_keys').where('id', 'like', `key_${tag}_%`).select('name', 'status', 'organisation_id')) as {
          name: string;
          status: string;
          organisation_id: number;
        }[]
      ).map((k) => [k.name, [k.status, k.organisation_id]]),
    );
  const invite = async () => ((await knex('invites').where({ invited_by: admin }).first('status')) as { status: string }).status;
  return { acme, beta, admin, keys, invite };
}

describe('leaving an organisation', () => {
  it('leaves the team’s token there, revoked, withdraws the invitations sent into it, and takes one’s own keys along', async () => {
    const knex = database.knex;
    const { acme, beta, admin, keys, invite } = await leaverWorld(knex, 'move');
    const announced = await knex.transaction((trx) => placeInOrganisation(trx, admin, { organisationId: beta, departmentId: null }, now));
    expect(await keys()).toEqual({ team: ['revoked', acme], own: ['active', beta] });
    expect(announced).toContain('hash-move-team'.padEnd(64, '0'));
    expect(await invite()).toBe('revoked');
  });

  it('a move within the organisation (another department) changes neither', async () => {
    const knex = database.knex;
    const { acme, admin, keys, invite } = await leaverWorld(knex, 'stay');
    await knex.transaction((trx) => placeInOrganisation(trx, admin, { organisationId: acme, departmentId: null }, now));
    expect(await keys()).toEqual({ team: ['active', acme], own: ['active', acme] });
    expect(await invite()).toBe('pending');
  });

  it('migration 036: a team token that followed its issuer out is given back to its team’s organisation, revoked', async () => {
    const knex = database.knex;
    const { acme, beta, admin, keys } = await leaverWorld(knex, 'old');
    // As the move did before the rule: the person and all their keys into Beta.
    await knex('users').where({ id: admin }).update({ organisation_id: beta });
    await knex('api_keys').where({ owner_user_id: admin }).update({ organisation_id: beta });
    await applyTeamTokenRule(knex);
    expect(await keys()).toEqual({ team: ['revoked', acme], own: ['active', beta] });
  });
});
