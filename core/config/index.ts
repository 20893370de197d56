import { buildCatalogue, readCatalogueDocument, type Catalogue } from './catalogue.js';
import { parseSettings, type Settings } from './settings.js';

export * from './catalogue.js';
export * from './settings.js';
export * from './portal-settings.js';
export * from './shutdown.js';
export * from './port-taken.js';

/** Everything a deployable is configured with: environment settings and the catalogue. */
export interface Config {
  settings: Settings;
  catalogue: Catalogue;
  /** The catalogue file as parsed, when there is one: it seeds an empty database catalogue. */
  catalogueDocument?: unknown;
}

/** Parses settings and the catalogue once at start-up (throws ConfigError naming the bad field). */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const settings = parseSettings(env);
  const catalogueDocument = readCatalogueDocument(settings.SVC_CATALOG);
  return { settings, catalogue: buildCatalogue(catalogueDocument, env, `catalogue ${settings.SVC_CATALOG}`), catalogueDocument };
}
