/**
 * Stored lifecycle states of a key (docs/keys.md). `budget_exhausted` is not one of them: it is
 * derived from the budget counters when a key is shown, and ends by itself at the reset.
 */
export const keyStatuses = ['active', 'suspended', 'revoked'] as const;
/** One key status. */
export type KeyStatus = (typeof keyStatuses)[number];

/** Budget periods of the spec. */
export const budgetPeriods = ['daily', 'monthly', 'rolling'] as const;
/** One budget period. */
export type BudgetPeriod = (typeof budgetPeriods)[number];

/** Who created a key; a key owned by Kubernetes (`crd`) is changed through Kubernetes only. */
export type KeySource = 'api' | 'crd' | 'portal' | 'bootstrap';

/**
 * A key as the gateway reads it: the contract between writers (Management API, operator,
 * portal) and the data plane. Plain data, no secret: the secret exists only as its hash.
 */
export interface KeyRecord {
  id: string;
  kind: 'managed' | 'token';
  name: string;
  secretHash: string;
  secretHint: string;
  status: KeyStatus;
  /** null = every model. */
  allowedModels: string[] | null;
  /** null = every region. */
  allowedRegions: string[] | null;
  budgetLimitUsd: number | null;
  budgetPeriod: BudgetPeriod | null;
  rateLimitRpm: number | null;
  metadata: Record<string, string>;
  /** Wallet the key's requests are charged to; null = the caller pays outside the platform. */
  payerId: string | null;
  source: KeySource;
  /**
   * The Kubernetes object that owns the key (`ManagedKey/<namespace>/<name>/<uid>`), for keys
   * the operator created; null otherwise.
   */
  managedBy: string | null;
  createdAt: string;
  updatedAt: string;
}
