import type { Logger } from 'pino';
import type { Catalogue } from '../../core/config/index.js';
import type { Store } from '../../core/store/index.js';
import type { KeyDirectory } from './auth/key-directory.js';
import type { UpstreamClient } from './http/upstream-client.js';
import type { SessionAffinity } from './routing/session-affinity.js';
import type { SupplierHealth } from './routing/supplier-health.js';

/** Everything the gateway app needs, built in main.ts (or by a test) and passed in. */
export interface GatewayDeps {
  catalogue: Catalogue;
  store: Store;
  keys: KeyDirectory;
  upstream: UpstreamClient;
  health: SupplierHealth;
  sessions: SessionAffinity;
  /** Most suppliers one request may try (the first and its failovers). */
  maxAttempts: number;
  logger: Logger;
  /** HMAC pepper for secrets. */
  pepper: string;
  /** HMAC of the root admin key under the pepper. */
  adminKeyHash: string;
  bodyLimitBytes: number;
  /** When the process started (ms), reported as models' `created`. */
  startedAt: number;
}
