import type { AutorouterPolicy } from '../autorouter/policy.js';

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
  /**
   * When the budget period last changed (ISO), null when never: part of the spend counters' names
   * (core/budget/periods.ts), so a period taken again does not find the counter it left.
   */
  budgetPeriodSince?: string | null;
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
  /** The key's integer id in portal addresses (`/dashboard/keys/{number}`). */
  number: number;
  /** The portal user who created the key (null outside the portal, or once that user is deleted). */
  ownerUserId: number | null;
  /** The owner's organisation when the key was created; the dashboard scopes keys by it. */
  organisationId: number | null;
  createdAt: string;
  updatedAt: string;
  /**
   * The effective autorouter policy (core/autorouter/policy.ts) when it is not the default; set
   * only on the gateway's read (KeyRepository.findByHash), so a policy change reaches the
   * gateways with the key's change announcement.
   */
  autorouter?: AutorouterPolicy;
  /**
   * Set (on the gateway's read, like `autorouter`) when the key's owner is suspended or archived:
   * the gateway refuses the key until the account is active again.
   */
  ownerInactive?: 'suspended' | 'archived';
  /**
   * How far below zero the payer's wallet may go for this key (a user's credit limit, set by an
   * administrator); read with the key like `ownerInactive`. Absent: none.
   */
  payerCreditUsd?: number;
}
