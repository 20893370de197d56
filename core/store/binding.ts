import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import type { Store, StoreScript } from './types.js';

/** A deployable whose database and store belong to different installations: it must not start. */
export class StoreBindingError extends Error {
  override readonly name = 'StoreBindingError';
}

/** Under the store's prefix: the id of the database this prefix belongs to. */
const installationKey = 'installation';

/** SET NX that answers the value now held: ours when we set it, else the other installation's. */
const claimInstallation: StoreScript<string> = {
  name: 'claimInstallation',
  lua: `local held = redis.call('GET', KEYS[1])
if held then return held end
redis.call('SET', KEYS[1], ARGV[1])
return ARGV[1]`,
  memory(redis, keys, args) {
    const held = redis.get(keys[0]!);
    if (held !== null) return held;
    redis.set(keys[0]!, args[0]!);
    return args[0]!;
  },
  decode: (reply) => String(reply),
};

interface BindingRow {
  prefix: string;
  installation: string;
}

/**
 * Refuses a start that would split state between installations (docs/reliability.md "One store
 * prefix per database"). Deployables on one database but different SVC_STORE_PREFIX values each
 * kept their own budget counters and key cache (a budget spent twice over; a revoked key served
 * for minutes); two databases on one prefix would share key ids and counters. So the database
 * records the prefix it is bound to, and the store, under that prefix, the database's id; either
 * one naming another installation throws StoreBindingError.
 *
 * The in-process store is the process's own: no other installation reaches it, so there is
 * nothing to bind. A store that does not answer is not a reason to refuse (gateways start during
 * an outage): `warn` says so and the store side is checked at the next start. `rebind` moves the
 * database to this prefix deliberately (SVC_STORE_REBIND, for one start).
 */
export async function bindStoreToDatabase(
  knex: Knex,
  store: Store,
  options: { rebind?: boolean; warn: (message: string) => void },
): Promise<void> {
  if (store.kind === 'memory') return;
  const prefix = store.prefix;
  // One transaction: a start refused by the store leaves the database as it found it.
  await knex.transaction(async (trx) => {
    await trx('store_binding')
      .insert({ singleton: 1, prefix, installation: randomBytes(12).toString('base64url') })
      .onConflict('singleton')
      .ignore();
    const bound = (await trx('store_binding').where({ singleton: 1 }).forUpdate().first('prefix', 'installation')) as BindingRow;
    if (bound.prefix !== prefix) {
      if (!options.rebind) throw new StoreBindingError(boundElsewhere(bound.prefix, prefix));
      await trx('store_binding').where({ singleton: 1 }).update({ prefix, bound_at: trx.fn.now() });
      options.warn(
        `SVC_STORE_REBIND: this database moved from store prefix "${bound.prefix}" to "${prefix}"; ` +
          `every deployable on it must now use SVC_STORE_PREFIX="${prefix}" (remove SVC_STORE_REBIND)`,
      );
    }
    let held: string;
    try {
      held = await store.runScript(claimInstallation, [installationKey], [bound.installation]);
    } catch (error) {
      options.warn(`store prefix "${prefix}" not checked against other installations: the store did not answer (${String(error)})`);
      return;
    }
    if (held !== bound.installation) throw new StoreBindingError(prefixTaken(prefix, held, bound.installation));
  });
}

/**
 * bindStoreToDatabase at a deployable's start: refused, the store and the database it opened
 * itself (`owned`; a test may hand it either) are closed before the refusal is thrown, so the
 * process can exit. The one call every deployable makes (gateway, audit writer, portal, operator).
 */
export async function bindAtStart(
  database: { knex: Knex; close(): Promise<void> },
  store: Store,
  options: { rebind?: boolean; warn: (message: string) => void; owned: { store: boolean; database: boolean } },
): Promise<void> {
  try {
    await bindStoreToDatabase(database.knex, store, options);
  } catch (error) {
    if (options.owned.store) await store.close();
    if (options.owned.database) await database.close();
    throw error;
  }
}

function boundElsewhere(bound: string, mine: string): string {
  return (
    `this database is bound to store prefix "${bound}", but SVC_STORE_PREFIX is "${mine}": every gateway, ` +
    `audit writer, portal and operator sharing a database must use the same SVC_STORE_PREFIX, or each keeps ` +
    `its own budget counters and key cache. Set SVC_STORE_PREFIX="${bound}"; to move this installation to ` +
    `"${mine}" deliberately, start one deployable once with SVC_STORE_REBIND=1 (docs/runbooks.md).`
  );
}

function prefixTaken(prefix: string, theirs: string, ours: string): string {
  return (
    `store prefix "${prefix}" on this Redis belongs to another installation (database ${theirs}; this ` +
    `database is ${ours}): key ids and counters would collide. Give each database its own ` +
    `SVC_STORE_PREFIX (with SVC_STORE_REBIND=1 for one start) or its own Redis (docs/runbooks.md).`
  );
}
