// `npm start` keeps its catalogue in the database (SVC_CATALOG_SOURCE=database, the default): the
// first start stores the demo catalogue generated for the simulator's port, and later starts read
// that copy, not the file. A later start on another SIM_PORT (the port-in-use message suggests
// one) would then route every demo model to a port nothing listens on (outside probe: every
// request 503 provider_unavailable, no word at start). So the demo's own providers — by name, still
// pointing at a loopback simulator on another port — are moved to the simulator just started, as a
// catalogue change (validated, versioned) before the gateway and the portal read it. Providers an
// administrator added or pointed elsewhere are left as they are.
import type { Knex } from 'knex';
import { changeDatabaseCatalogue, catalogueVersion } from '../../core/catalogue/index.js';

/** The demo catalogue's provider names (demo-catalogue.ts). */
const demoProviders = ['sim-eu', 'sim-us', 'sim-anthropic', 'sim-responses'];

/** A demo simulator address: loopback, any port, the `/v1` base the demo catalogue writes. */
const simulatorBase = /^http:\/\/127\.0\.0\.1:(\d+)\/v1$/;

/**
 * Points the stored demo providers at `simulatorUrl` when they name another simulator port;
 * returns the address they pointed at (for the start's message), or undefined when nothing moved.
 */
export async function followSimulator(
  knex: Knex,
  simulatorUrl: string,
  options: { env: Record<string, string | undefined>; pepper: string },
): Promise<string | undefined> {
  if ((await catalogueVersion(knex)) === 0) return undefined; // Not stored yet: this start seeds it from the file.
  const target = `${simulatorUrl}/v1`;
  const stale = (await knex('catalogue_providers').whereIn('name', demoProviders).select('id', 'base_url')) as {
    id: number;
    base_url: string;
  }[];
  const moving = stale.filter((p) => simulatorBase.test(p.base_url) && p.base_url !== target);
  if (moving.length === 0) return undefined;
  await changeDatabaseCatalogue(knex, { ...options, actorId: null }, async (trx) => {
    await trx('catalogue_providers')
      .whereIn(
        'id',
        moving.map((p) => p.id),
      )
      .update({ base_url: target });
  });
  return moving[0]!.base_url;
}
