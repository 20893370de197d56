import type { Tracer } from '@opentelemetry/api';
import type { Knex } from 'knex';
import type { ActivityLog } from '../../core/activity/index.js';
import type { Logger } from 'pino';
import type { Catalogue, ResolvedPortalSettings } from '../../core/config/index.js';
import type { OneTimeTokens, SessionRepository, UserRepository, InviteRepository } from '../../core/identity/index.js';
import type { JobRunner } from '../../core/jobs/index.js';
import type { Store } from '../../core/store/index.js';
import type { PortalMetrics } from '../../core/telemetry/index.js';
import type { Mailer } from './mail/mailer.js';
import type { OidcProvider } from './features/sso/oidc.js';
import type { SsoProviderId } from './features/sso/providers.js';
import type { BillingRuntime } from './features/billing/runtime.js';

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
  /** The account activity log every portal action writes to. */
  activity: ActivityLog;
  mailer: Mailer;
  /** OpenTelemetry tracer when tracing is on (docs/observability.md); undefined = no spans at all. */
  tracer?: Tracer;
  /** The configured identity providers (none, one or both). */
  oidcProviders: ReadonlyMap<SsoProviderId, OidcProvider>;
  /** Card payments, automatic top-up and the processor webhook (docs/billing.md). */
  billing: BillingRuntime;
  /** The background job queue (exports; docs/reports.md "Jobs"): every portal sends, workers take. */
  jobs: JobRunner;
}
