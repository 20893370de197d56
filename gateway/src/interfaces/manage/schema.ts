import { z } from 'zod';
import { isWholeNanoUsd } from '../../../../core/budget/index.js';
import { regionInput } from '../../../../core/config/index.js';
import { isIsoDateOrTime, isoInstant, namesRealDay } from '../../../../core/time/index.js';
import { budgetPeriods, keyStatuses } from '../../../../core/keys/index.js';
import { projectPayerId } from '../../../../core/projects/index.js';
import { hasDirectionControls, isStorableText } from '../../../../core/text/well-formed.js';

// Constraints the gateway API leaves open (docs/spec-conformance.md 2.3), decided once here and documented in docs/keys.md.

/**
 * Text PostgreSQL can store: a NUL character is refused by `text` columns and an unpaired UTF-16
 * surrogate has no UTF-8 encoding, so either would fail in the database as a 500.
 */
export const storableText = (schema: z.ZodString) =>
  schema.refine(isStorableText, 'must not contain NUL characters or unpaired surrogates');

/** A key's name, shown to other people (the portal, kubectl): no direction controls, which spoof how it reads. */
const name = storableText(z.string().trim().min(1, 'must not be empty').max(200)).refine(
  (text) => !hasDirectionControls(text),
  'must not contain Unicode direction controls (U+202A–U+202E, U+2066–U+2069)',
);
/** Model ids (one named twice is kept once, by the key repository). */
const modelList = z
  .array(storableText(z.string().min(1).max(200)))
  .min(1)
  .max(100);
/** The API shows `allowed_regions` as a string ("EU"); a list of regions is accepted too; any case ("eu" is EU). */
const regions = z
  .union([regionInput, z.array(regionInput).min(1).max(20)])
  .transform((v) => (typeof v === 'string' ? [v] : [...new Set(v)]));
/**
 * USD amounts are kept in nano-USD: one with more than nine decimal places would be stored
 * rounded (a credit of 1e-12 as a ledger entry of 0), so it is refused rather than changed.
 */
const usd = (schema: z.ZodNumber) => schema.refine(isWholeNanoUsd, 'must have at most 9 decimal places (amounts are kept in nano-USD)');
const money = usd(z.number().min(0).max(1_000_000_000));
const rpm = z.number().int().min(1).max(1_000_000);
const metadataPairs = z
  .record(storableText(z.string().min(1).max(64)), storableText(z.string().max(512)))
  .refine((m) => Object.keys(m).length <= 32, 'holds at most 32 pairs');
/** A `__proto__` key would be dropped on the way to the database (no plain key in JavaScript): refused, not lost. */
const metadata = z.preprocess((value, ctx) => {
  if (value !== null && typeof value === 'object' && Object.hasOwn(value, '__proto__')) {
    ctx.addIssue({ code: 'custom', message: 'must not have the key "__proto__"', path: ['__proto__'], input: value });
  }
  return value;
}, metadataPairs);
/** Payers are named `<kind>:<id>`: project, org, user (delegated or billing user) or key. */
const payer = z
  .string()
  .regex(/^(project|org|user|key):[A-Za-z0-9._-]{1,128}$/, 'must look like project:<id>, org:<id>, user:<id> or key:<id>');

/** `POST /v1/manage/keys`. */
export const createKeyRequest = z.strictObject({
  name,
  allowed_models: modelList.nullable().optional(),
  allowed_regions: regions.nullable().optional(),
  budget_limit: money.nullable().optional(),
  budget_period: z.enum(budgetPeriods).optional(),
  rate_limit_rpm: rpm.nullable().optional(),
  metadata: metadata.optional(),
  payer: payer.nullable().optional(),
});

/** `PATCH /v1/manage/keys/{id}`: any subset; `null` clears a limit. `revoked` only via revoke. */
export const patchKeyRequest = z
  .strictObject({
    name: name.optional(),
    allowed_models: modelList.nullable().optional(),
    allowed_regions: regions.nullable().optional(),
    budget_limit: money.nullable().optional(),
    budget_period: z.enum(budgetPeriods).optional(),
    rate_limit_rpm: rpm.nullable().optional(),
    metadata: metadata.optional(),
    payer: payer.nullable().optional(),
    status: z.enum(['active', 'suspended']).optional(),
  })
  .refine((v) => Object.keys(v).length > 0, 'send at least one field to change');

/** `GET /v1/manage/keys` query. */
export const listKeysQuery = z.strictObject({
  // The stored status: `budget_exhausted` is derived from the period's spend when a key is shown,
  // so it cannot select a page; asked for, it is refused saying so, and `active` includes such keys.
  status: z
    .enum(keyStatuses, {
      error: (issue) =>
        issue.input === 'budget_exhausted'
          ? "filters on the stored status (active, suspended or revoked); budget_exhausted is derived from spend when a key is shown — list status=active and read each key's status"
          : undefined,
    })
    .optional(),
  name_prefix: storableText(z.string().min(1).max(200)).optional(),
  source: z.enum(['api', 'crd', 'portal', 'bootstrap']).optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z
    .string()
    .regex(/^[A-Za-z0-9_-]+$/, 'is not a cursor this API returned')
    .max(500)
    .optional(),
});

/** Years 1–9999: JavaScript reads dates far beyond what PostgreSQL and the ISO format agree on. */
const earliest = Date.parse('0001-01-01T00:00:00Z');
const latest = Date.parse('9999-12-31T23:59:59.999Z');
/**
 * An ISO 8601 date or date-time only (2026-11-01, 2026-11-01T08:00:00Z; a time without a zone is
 * UTC): not whatever else Date.parse reads ("1" was 2001-01-01), through the portal's one parser.
 */
const isoDate = z
  .string()
  .refine(namesRealDay, 'names a day its month does not have')
  .refine(isIsoDateOrTime, 'must be an ISO 8601 date or date-time, such as 2026-11-01 or 2026-11-01T08:00:00Z')
  .refine((v) => isoInstant(v).getTime() >= earliest && isoInstant(v).getTime() <= latest, 'must be between the years 1 and 9999')
  .transform(isoInstant);

/** `GET /v1/manage/keys/{id}/audit` query. */
export const auditQuery = z.strictObject({
  from: isoDate.optional(),
  to: isoDate.optional(),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
  cursor: z
    .string()
    .regex(/^[A-Za-z0-9_-]+$/, 'is not a cursor this API returned')
    .max(500)
    .optional(),
});

/** `POST /v1/manage/wallets/{payer}/credits`. */
export const creditRequest = z.strictObject({
  amount_usd: usd(z.number().positive().max(1_000_000)),
  reason: storableText(z.string().trim().min(1).max(500)),
});

/** Path parameter of wallet routes. */
export const payerParam = payer;

/** A team (department) or project name a token is scoped to: a slug, as the portal names them. */
const scopeName = z.string().regex(/^[a-z0-9][a-z0-9._-]{0,63}$/, 'must be a lower-case slug of up to 64 letters, digits, ".", "_" or "-"');

/** `POST /v1/manage/tokens`: an `svc_` API token scoped to a team or a project (at most one). */
export const createTokenRequest = z
  .strictObject({ name, team: scopeName.optional(), project: scopeName.optional(), payer: payer.nullable().optional() })
  .refine((v) => !(v.team && v.project), { message: 'a token is scoped to a team or a project, not both', path: ['project'] })
  // A project pays for its own tokens (docs/projects.md): another payer, or none — which ran the
  // token free of every wallet (outside probe) — contradicts the scope.
  .refine((v) => v.project === undefined || v.payer === undefined || v.payer === projectPayerId(v.project), {
    message: "a project's tokens are paid by the project's wallet (project:<project>); leave payer out",
    path: ['payer'],
  });

/** `GET /v1/manage/tokens`. */
export const listTokensQuery = z.strictObject({
  status: z.enum(keyStatuses).optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.string().max(200).optional(),
});
