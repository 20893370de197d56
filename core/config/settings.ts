import { z } from 'zod';
import { formatIssues } from './format-issues.js';

/** Thrown when a setting or the catalogue is invalid; the message names every bad field. */
export class ConfigError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ConfigError';
  }
}

const port = (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback);
const optionalUrl = (protocols: string[]) =>
  z
    .string()
    .trim()
    .transform((v) => (v === '' ? undefined : v))
    .pipe(z.url({ protocol: new RegExp(`^(${protocols.join('|')})$`) }).optional())
    .optional();
const isRedisUrl = (v: string) => z.url({ protocol: /^(redis|rediss)$/ }).safeParse(v).success;
/** A yes/no setting: `true`/`1` or `false`/`0` (anything else is refused, never guessed). */
export const flag = (fallback: boolean) =>
  z
    .enum(['true', 'false', '1', '0'], { message: 'must be true or false' })
    .default(fallback ? 'true' : 'false')
    .transform((v) => v === 'true' || v === '1');
const secret = z.string().min(32, 'must be at least 32 characters (generate one with: openssl rand -base64 48)');

/** The environment variables every deployable reads; documented in docs/configuration.md. */
export const settingsSchema = z.object({
  PORT: port(8080),
  PORTAL_PORT: port(3000),
  SVC_HOST: z.string().min(1).default('0.0.0.0'),
  DATABASE_URL: optionalUrl(['postgres', 'postgresql']),
  /** One `redis://` URL; with SVC_REDIS_CLUSTER, one or more cluster nodes separated by commas. */
  REDIS_URL: z
    .string()
    .trim()
    .transform((v) => (v === '' ? undefined : v))
    .pipe(
      z
        .string()
        .refine(
          (v) => isRedisUrl(v) || v.split(',').every((part) => isRedisUrl(part.trim())),
          'must be a redis:// or rediss:// URL (or, with SVC_REDIS_CLUSTER, several separated by commas)',
        )
        .optional(),
    )
    .optional(),
  /**
   * REDIS_URL is a Redis Cluster (its URLs are seed nodes): store keys are hash-tagged per
   * entity and enforcement is split per shard (docs/architecture.md "Store sharding").
   */
  SVC_REDIS_CLUSTER: flag(false),
  SVC_ADMIN_KEY: secret,
  SVC_KEY_PEPPER: secret,
  SVC_DATA_DIR: z.string().min(1).default('./.data'),
  SVC_CATALOG: z.string().min(1, 'must name the YAML catalogue file'),
  /**
   * Where the catalogue lives (docs/configuration.md): `database` — the file seeds an empty
   * database once, then administrators change providers and prices in the portal and every
   * replica follows live; `file` — the file is the only truth (GitOps), portal changes refused.
   */
  SVC_CATALOG_SOURCE: z.enum(['database', 'file'], { message: 'must be database or file' }).default('database'),
  /** Supplier base URLs on link-local or cloud metadata addresses are refused unless this is true. */
  SVC_ALLOW_LINK_LOCAL_SUPPLIERS: flag(false),
  SVC_DB_POOL_MAX: z.coerce.number().int().min(1).max(100).default(10),
  SVC_STORE_PREFIX: z.string().default('svc:'),
  /** For one start: bind the database to this SVC_STORE_PREFIX instead of refusing (core/store/binding.ts). */
  SVC_STORE_REBIND: flag(false),
  /**
   * How long one Redis command (or connection attempt) may wait before it fails as a store
   * outage: a request then gets 503, or its audit record the spill file, instead of waiting for
   * as long as Redis is unreachable.
   */
  SVC_STORE_TIMEOUT_MS: z.coerce.number().int().min(50).max(60_000).default(2_000),
  SVC_BODY_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(10 * 1024 * 1024),
  SVC_UPLOAD_IDLE_TIMEOUT_MS: z.coerce.number().int().min(100).default(30_000),
  /** Deadline for a request's headers and body to arrive, counted from its first byte. */
  SVC_BODY_TIMEOUT_MS: z.coerce.number().int().min(100).default(60_000),
  /**
   * Most bytes of a supplier's JSON answer read before it is refused as the supplier's failure
   * (502, failover); an embeddings answer may take more, as its inputs need (gateway/src/http/bounded-body.ts).
   */
  SVC_SUPPLIER_ANSWER_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1024 * 1024)
    .default(32 * 1024 * 1024),
  /** Deadline for a request's headers to arrive. */
  SVC_HEADERS_TIMEOUT_MS: z.coerce.number().int().min(100).default(10_000),
  SVC_SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).default(25_000),
  /**
   * Where the gateway's audit stream is written to PostgreSQL (docs/architecture.md "Audit"):
   * `thread` a worker thread of each gateway, `inline` the serving thread, `off` elsewhere (an
   * `npm run audit-writer` process or Deployment); `auto` is `thread` with Redis and PostgreSQL,
   * `inline` on the embedded defaults (whose in-process store a thread cannot share).
   */
  SVC_AUDIT_WRITER: z.enum(['auto', 'inline', 'thread', 'off']).default('auto'),
  /**
   * Gateway processes on this host (node:cluster, one port): a number, or `auto` for one per
   * core when the store and database are shared (Redis, PostgreSQL), else 1. In Kubernetes keep
   * 1 and scale replicas.
   */
  SVC_WORKERS: z.union([z.literal('auto'), z.coerce.number().int().min(1).max(64)]).default(1),
  SVC_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(10).default(3),
  SVC_SESSION_TTL_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .default(30 * 60_000),
  SVC_CIRCUIT_FAILURES: z.coerce.number().int().min(1).default(3),
  SVC_CIRCUIT_WINDOW_MS: z.coerce.number().int().min(100).default(30_000),
  SVC_CIRCUIT_COOLDOWN_MS: z.coerce.number().int().min(100).default(30_000),
  // A pooled supplier credential the supplier rate-limited (429; its Retry-After when longer) or
  // rejected (401/403) stays out of rotation this long (docs/routing.md "Credential pools").
  SVC_CREDENTIAL_RATE_LIMITED_COOLDOWN_MS: z.coerce.number().int().min(100).default(60_000),
  SVC_CREDENTIAL_AUTH_FAILURE_COOLDOWN_MS: z.coerce.number().int().min(100).default(300_000),
  /** Prometheus `/metrics` port of each deployable (gateway, operator, portal), apart from its API port; 0 turns it off. */
  SVC_METRICS_PORT: port(9464),
  /** Prompt and completion text in logs: customer data, so off unless someone decides otherwise. */
  SVC_LOG_PROMPTS: flag(false),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

/**
 * True when the store and the database are the shared Redis and PostgreSQL (REDIS_URL and
 * DATABASE_URL), which other processes and threads can reach too; false on the embedded
 * defaults, whose in-process store and PGlite belong to one process. Decides whether the audit
 * writer can run in a thread, elsewhere, or gateway workers can be several (SVC_WORKERS).
 */
export function sharedServices(settings: { REDIS_URL?: string | undefined; DATABASE_URL?: string | undefined }): boolean {
  return Boolean(settings.REDIS_URL && settings.DATABASE_URL);
}

/** Parsed environment settings. */
export type Settings = z.infer<typeof settingsSchema>;

/**
 * The store settings that only make sense together, checked after each parsed alone (every
 * deployable's parser calls this); throws a ConfigError naming them.
 */
export function checkStoreSettings(settings: Pick<Settings, 'REDIS_URL' | 'SVC_REDIS_CLUSTER'>, what = 'settings'): void {
  const problems: string[] = [];
  // One URL may hold a comma (in a password); only a cluster reads REDIS_URL as a list.
  if (settings.REDIS_URL && !settings.SVC_REDIS_CLUSTER && !isRedisUrl(settings.REDIS_URL)) {
    problems.push('REDIS_URL: several URLs are cluster seed nodes; set SVC_REDIS_CLUSTER=true (or give one URL)');
  }
  if (settings.SVC_REDIS_CLUSTER && !settings.REDIS_URL) problems.push('SVC_REDIS_CLUSTER: needs REDIS_URL (a node of the cluster)');
  if (problems.length > 0) throw new ConfigError(`invalid ${what}:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
}

/** Parses the environment once; a bad or missing setting throws a ConfigError naming it. */
export function parseSettings(env: Record<string, string | undefined>): Settings {
  const result = settingsSchema.safeParse(env);
  if (!result.success) {
    throw new ConfigError(`invalid settings:\n${formatIssues(result.error.issues)}`);
  }
  checkStoreSettings(result.data);
  return result.data;
}
