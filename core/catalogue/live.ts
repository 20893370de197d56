// The catalogue a running gateway or portal serves from, when it lives in the database
// (SVC_CATALOG_SOURCE=database): a snapshot swapped whole when the stored version moves, so a
// request sees one consistent catalogue from start to end. Changes are announced on the store's
// channel and every replica reloads within moments; a refresh every `refreshMs` catches an
// announcement missed while the store was unreachable.
import type { Knex } from 'knex';
import type { Catalogue } from '../config/index.js';
import type { RegionPolicies } from '../regions/index.js';
import type { Store } from '../store/index.js';
import { catalogueVersion, loadDatabaseCatalogue, seedDatabaseCatalogue } from './repository.js';

/** The store channel a catalogue change is announced on (the message is the new version). */
export const catalogueChannel = 'catalogue:changed';

/** Tells every replica that the stored catalogue is now at `version`. */
export async function announceCatalogueChange(store: Store, version: number): Promise<void> {
  await store.publish(catalogueChannel, String(version));
}

/** Where the live catalogue reads from and reports to. */
export interface LiveCatalogueDeps {
  knex: Knex;
  store: Store;
  env: Record<string, string | undefined>;
  pepper: string;
  refreshMs?: number;
  logger?: { warn(facts: object, message: string): void; info(facts: object, message: string): void };
}

export class LiveCatalogue implements Catalogue {
  private snapshot: Catalogue;
  private loaded = 0;
  private timer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => Promise<void>) | undefined;
  private reloading: Promise<void> | undefined;
  regionPolicies?: { current(): RegionPolicies };

  constructor(
    initial: Catalogue,
    private readonly deps: LiveCatalogueDeps,
  ) {
    this.snapshot = initial;
  }

  get suppliers(): Catalogue['suppliers'] {
    return this.snapshot.suppliers;
  }

  get routes(): Catalogue['routes'] {
    return this.snapshot.routes;
  }

  get models(): Catalogue['models'] {
    return this.snapshot.models;
  }

  /** The stored version being served (0: still the file's catalogue). */
  get version(): number {
    return this.loaded;
  }

  /**
   * Seeds an empty database from `seedDocument` (the file), loads the stored catalogue, and
   * follows its changes. A database catalogue that does not build stops start-up (ConfigError).
   */
  async start(seedDocument?: unknown): Promise<void> {
    if (seedDocument !== undefined && (await catalogueVersion(this.deps.knex)) === 0) {
      if (await seedDatabaseCatalogue(this.deps.knex, seedDocument))
        this.deps.logger?.info({}, 'catalogue seeded into the database from the file');
    }
    await this.reload();
    this.unsubscribe = await this.deps.store.subscribe(catalogueChannel, (message) => {
      if (Number(message) > this.loaded) void this.reload().catch(() => undefined);
    });
    this.timer = setInterval(() => void this.reload().catch(() => undefined), this.deps.refreshMs ?? 30_000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.unsubscribe?.();
  }

  /** Loads the stored catalogue if its version moved; a bad one is logged and the current kept. */
  reload(): Promise<void> {
    this.reloading ??= (async () => {
      try {
        const stored = await loadDatabaseCatalogue(this.deps.knex, this.deps.env, this.deps.pepper, this.loaded);
        if (!stored) return;
        this.snapshot = stored.catalogue;
        this.loaded = stored.version;
      } catch (error) {
        this.deps.logger?.warn(
          { err: error instanceof Error ? error.message : String(error) },
          'catalogue reload failed; serving the previous one',
        );
        if (this.loaded === 0) throw error;
      } finally {
        this.reloading = undefined;
      }
    })();
    return this.reloading;
  }
}
