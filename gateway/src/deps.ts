import type { Tracer } from '@opentelemetry/api';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { AuditJournal } from '../../core/audit/index.js';
import type { KeyRepository } from '../../core/keys/index.js';
import type { WalletLedger } from '../../core/wallets/index.js';
import type { Catalogue } from '../../core/config/index.js';
import type { Store } from '../../core/store/index.js';
import type { GatewayMetrics } from '../../core/telemetry/index.js';
import type { KeyDirectory } from './auth/key-directory.js';
import type { SpendRecovery } from './enforcement/spend-recovery.js';
import type { UpstreamClient } from './http/upstream-client.js';
import type { RequestCancellation } from './http/cancellation.js';
import type { SessionAffinity } from './routing/session-affinity.js';
import type { CredentialPool } from './routing/credential-pool.js';
import type { SupplierHealth } from './routing/supplier-health.js';

/** How the gateway observes itself (core/telemetry). */
export interface GatewayTelemetry {
  metrics: GatewayMetrics;
  /** Undefined when tracing is off: then no span is ever created. */
  tracer: Tracer | undefined;
  /** SVC_LOG_PROMPTS: the request line carries the request body. */
  logPromptContent: boolean;
  /** Requests begun and not yet answered, read by svc_gateway_requests_in_flight when scraped. */
  inFlight: { count: number };
}

/** Everything the gateway app needs, built in main.ts (or by a test) and passed in. */
export interface GatewayDeps {
  catalogue: Catalogue;
  store: Store;
  keys: KeyDirectory;
  /** Keys in PostgreSQL, for the Management API (never on the inference hot path). */
  keyRepository: KeyRepository;
  /** PostgreSQL, for the Management API's reads (never on the inference hot path). */
  database: Knex;
  wallets: WalletLedger;
  /** Rebuilds budget counters and wallet mirrors the store lost; retries refused settlements. */
  spend: SpendRecovery;
  /** Where each request's audit record goes (stream, else spill; checked against PostgreSQL). */
  audit: AuditJournal;
  /** Milliseconds since the epoch; injectable so budget periods can be tested at any instant. */
  clock: () => number;
  upstream: UpstreamClient;
  health: SupplierHealth;
  /** Pooled supplier credentials: which are in rotation, and the token log of those sidelined. */
  credentials: CredentialPool;
  sessions: SessionAffinity;
  /** Most suppliers one request may try (the first and its failovers). */
  maxAttempts: number;
  logger: Logger;
  telemetry: GatewayTelemetry;
  /** HMAC pepper for secrets. */
  pepper: string;
  /** HMAC of the root admin key under the pepper. */
  adminKeyHash: string;
  bodyLimitBytes: number;
  /** A request's headers and body must have arrived this long after it began (else 408, closed). */
  bodyTimeoutMs: number;
  /** A request's headers must have arrived this long after it began. */
  headersTimeoutMs: number;
  /** An audio upload idle this long is abandoned. */
  uploadIdleMs: number;
  /** When the process started (ms), reported as models' `created`. */
  startedAt: number;
  /**
   * The requests routed to suppliers and not finished yet: a shutdown whose grace ends with some
   * still open (a long stream) ends each with its family's error event instead of a silent cut.
   */
  inFlight?: Set<RequestCancellation>;
}
