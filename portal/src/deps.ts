import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Catalogue, ResolvedPortalSettings } from '../../core/config/index.js';
import type { OneTimeTokens, SessionRepository, UserRepository, InviteRepository } from '../../core/identity/index.js';
import type { Store } from '../../core/store/index.js';
import type { PortalMetrics } from '../../core/telemetry/index.js';
import type { Mailer } from './mail/mailer.js';
import type { OidcProvider } from './features/sso/oidc.js';
import type { SsoProviderId } from './features/sso/providers.js';

/** Everything the portal app needs, built in server.ts (or by a test) and passed in. */
export interface PortalDeps {
  settings: ResolvedPortalSettings;
  catalogue: Catalogue;
  database: Knex;
  store: Store;
  logger: Logger;
  metrics: PortalMetrics;
  /** Milliseconds since the epoch; injectable so token and session lifetimes can be tested. */
  clock: () => number;
  /** The gateway's public base URL, for code samples. */
  gatewayUrlHint: string;
  users: UserRepository;
  tokens: OneTimeTokens;
  sessions: SessionRepository;
  invites: InviteRepository;
  mailer: Mailer;
  /** The configured identity providers (none, one or both). */
  oidcProviders: ReadonlyMap<SsoProviderId, OidcProvider>;
}
