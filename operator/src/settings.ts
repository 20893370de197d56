import { hostname } from 'node:os';
import { z } from 'zod';
import { checkStoreSettings, ConfigError, flag, settingsSchema } from '../../core/config/index.js';
import { formatIssues } from '../../core/config/format-issues.js';

const ms = (fallback: number, min = 1) => z.coerce.number().int().min(min).default(fallback);

/**
 * The operator's environment: the shared settings it uses (databases, pepper, metrics, logs)
 * plus leader election and controller tuning. Documented in docs/configuration.md.
 */
export const operatorSettingsSchema = settingsSchema
  .pick({
    DATABASE_URL: true,
    REDIS_URL: true,
    SVC_REDIS_CLUSTER: true,
    SVC_KEY_PEPPER: true,
    SVC_DATA_DIR: true,
    SVC_DB_POOL_MAX: true,
    SVC_STORE_PREFIX: true,
    SVC_STORE_REBIND: true,
    SVC_STORE_TIMEOUT_MS: true,
    SVC_HOST: true,
    SVC_METRICS_PORT: true,
    LOG_LEVEL: true,
    // database (the default, as for the gateway): specs are checked against the stored catalogue
    // administrators change in the portal, followed live; file: against SVC_CATALOG as it is.
    SVC_CATALOG_SOURCE: true,
  })
  .extend({
    /** The catalogue, to check model, region and supplier names in specs; without it the checks report Unknown. */
    SVC_CATALOG: z.string().min(1).optional(),
    /** Lease holder identity (the pod name in Kubernetes). */
    POD_NAME: z.string().min(1).default(hostname()),
    /** Namespace of the leader Lease (the operator's own). */
    POD_NAMESPACE: z.string().min(1).default('default'),
    SVC_LEASE_NAME: z.string().min(1).default('svc-gateway-operator'),
    SVC_LEASE_DURATION_MS: ms(15_000, 100),
    SVC_LEASE_RENEW_DEADLINE_MS: ms(10_000, 50),
    SVC_LEASE_RETRY_MS: ms(2_000, 10),
    /** Every object is reconciled again this often even without a change. */
    SVC_OPERATOR_RESYNC_MS: ms(5 * 60_000, 100),
    /** Watches end after this long and resume, so a silently dead connection cannot last. */
    SVC_OPERATOR_WATCH_TIMEOUT_S: ms(300),
    /** How often a ManagedKey with a budget has its status usage refreshed. */
    SVC_OPERATOR_BUDGET_REFRESH_MS: ms(60_000, 100),
    /**
     * Budget usage alone is written to a ManagedKey's status when it moved by at least this share
     * of the limit, or when the last write is older than SVC_OPERATOR_BUDGET_STATUS_MAX_AGE_MS.
     */
    SVC_OPERATOR_BUDGET_STATUS_MIN_CHANGE: z.coerce.number().min(0).max(1).default(0.01),
    SVC_OPERATOR_BUDGET_STATUS_MAX_AGE_MS: ms(10 * 60_000, 0),
    /**
     * /health fails when one reconcile has run this long: a controller whose workers hang (a call
     * that never returns) is restarted by its liveness probe instead of silently doing nothing.
     */
    SVC_OPERATOR_STUCK_AFTER_MS: ms(5 * 60_000, 1_000),
    /**
     * Apply the bundled CRDs (server-side apply, never deleting) at start, so `helm upgrade`
     * upgrades them too; the chart turns it on with operator.manageCRDs.
     */
    SVC_OPERATOR_APPLY_CRDS: flag(false),
    SVC_OPERATOR_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(4),
    SVC_OPERATOR_RETRY_BASE_MS: ms(500),
    SVC_OPERATOR_RETRY_MAX_MS: ms(60_000),
    /**
     * Comma-separated namespaces whose ManagedKeys the operator reconciles (its RBAC grants
     * Secrets only there); empty: every namespace. The chart sets it from operator.watchNamespaces.
     */
    SVC_OPERATOR_WATCH_NAMESPACES: z
      .string()
      .default('')
      .transform((list) =>
        list
          .split(',')
          .map((n) => n.trim())
          .filter((n) => n.length > 0),
      ),
  })
  .refine((s) => s.SVC_LEASE_RENEW_DEADLINE_MS < s.SVC_LEASE_DURATION_MS, {
    path: ['SVC_LEASE_RENEW_DEADLINE_MS'],
    message: 'must be shorter than SVC_LEASE_DURATION_MS (a leader must step down before others may take over)',
  })
  .refine((s) => s.SVC_LEASE_RETRY_MS < s.SVC_LEASE_RENEW_DEADLINE_MS, {
    path: ['SVC_LEASE_RETRY_MS'],
    message: 'must be shorter than SVC_LEASE_RENEW_DEADLINE_MS (a leader needs several tries to renew)',
  });

/** Parsed operator settings. */
export type OperatorSettings = z.infer<typeof operatorSettingsSchema>;

/** Parses the operator's environment once; a bad setting throws a ConfigError naming it. */
export function parseOperatorSettings(env: Record<string, string | undefined>): OperatorSettings {
  const result = operatorSettingsSchema.safeParse(env);
  if (!result.success) throw new ConfigError(`invalid operator settings:\n${formatIssues(result.error.issues)}`);
  checkStoreSettings(result.data, 'operator settings');
  return result.data;
}
