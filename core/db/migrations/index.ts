import type { Knex } from 'knex';
import * as m001 from './001_api_keys.js';
import * as m002 from './002_audit_log.js';
import * as m003 from './003_wallets.js';
import * as m004 from './004_key_managed_by.js';
import * as m005 from './005_region_policies.js';
import * as m006 from './006_identity.js';
import * as m007 from './007_wallet_nano.js';

/** A migration module: forward and backward steps. */
interface Migration {
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
}

/**
 * Migrations listed explicitly (not discovered from the file system) so they work the same
 * under tsx, compiled JavaScript and bundles. Append new ones; never rename or reorder.
 */
const migrations: ReadonlyArray<readonly [string, Migration]> = [
  ['001_api_keys', m001],
  ['002_audit_log', m002],
  ['003_wallets', m003],
  ['004_key_managed_by', m004],
  ['005_region_policies', m005],
  ['006_identity', m006],
  ['007_wallet_nano', m007],
];

/** knex migration source over the explicit list above. */
export const migrationSource: Knex.MigrationSource<readonly [string, Migration]> = {
  getMigrations: async () => [...migrations],
  getMigrationName: (migration) => migration[0],
  getMigration: async (migration) => migration[1],
};
