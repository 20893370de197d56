// Migration 035 against a real migrated database (PostgreSQL or PGlite): what was stored before
// the leavers' rule (leaveProjects) is brought under it once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../db/index.js';
import { up as applyLeaversRule } from '../db/migrations/035_project_tokens_of_leavers.js';
import { createTestDatabase } from '../db/testing.js';
import { projectPayerId } from './projects.js';

let database: Database;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database?.close();
});

describe('migration 035: project tokens of people who left', () => {
  it('ends memberships across organisations, returns tokens to their project’s organisation and revokes those of non-members', async () => {
    const knex = database.knex;
    const [acme, beta] = (
      (await knex('organisations')
        .insert([
          { name: 'Acme', slug: 'acme-035' },
          { name: 'Beta', slug: 'beta-035' },
        ])
        .returning('id')) as { id: number }[]
    ).map((o) => o.id) as [number, number];
    const person = async (email: string, organisationId: number) =>
      (
        (await knex('users').insert({ email, display_name: email, organisation_id: organisationId }).returning('id')) as { id: number }[]
      )[0]!.id;
    const stays = await person('stays@035.test', acme);
    const removed = await person('removed@035.test', acme);
    const moved = await person('moved@035.test', beta); // moved to Beta before the rule, still in the project
    const project = (
      (await knex('projects').insert({ organisation_id: acme, name: 'P', created_by: stays }).returning('id')) as {
        id: number;
      }[]
    )[0]!.id;
    await knex('project_members').insert([
      { project_id: project, user_id: stays },
      { project_id: project, user_id: moved },
    ]);
    const token = async (name: string, owner: number | null, organisationId: number) => {
      await knex('api_keys').insert({
        id: `key_035_${name}`,
        kind: 'token',
        name,
        secret_hash: `hash-035-${name}`.padEnd(64, '0'),
        secret_hint: 'svc_…',
        source: owner === null ? 'api' : 'portal',
        owner_user_id: owner,
        organisation_id: organisationId,
        payer_id: projectPayerId(project),
      });
    };
    await token('stays', stays, acme);
    await token('removed', removed, acme);
    await token('moved', moved, beta);
    await token('managed', null, acme);

    await applyLeaversRule(knex);

    const tokens = Object.fromEntries(
      (
        (await knex('api_keys').where('id', 'like', 'key_035_%').select('name', 'status', 'organisation_id', 'revoked_at')) as {
          name: string;
          status: string;
          organisation_id: number;
          revoked_at: Date | null;
        }[]
      ).map((t) => [t.name, [t.status, t.organisation_id, t.revoked_at !== null]]),
    );
    expect(tokens).toEqual({
      stays: ['active', acme, false],
      removed: ['revoked', acme, true],
      moved: ['revoked', acme, true],
      managed: ['active', acme, false],
    });
    expect(await knex('project_members').where({ project_id: project }).pluck('user_id')).toEqual([stays]);
  });
});
