// The key form (HTML form fields or the same names in JSON) → the repository's fields. The rules
// are the Management API's (docs/keys.md): a name up to 200 characters, models and regions from
// the catalogue, a budget in USD with its period, a positive requests-per-minute limit. Empty
// (or null, as the key's JSON shows a lifted limit) fields mean "no limit".
import { z } from 'zod';
import { ApiError } from '../../../../core/errors/index.js';
import type { Catalogue } from '../../../../core/config/index.js';
import { budgetPeriods, type BudgetPeriod, type KeyPatch, type KeyRecord } from '../../../../core/keys/index.js';
import { inPlainWords, usdAmountOrNoneUpTo, validationError } from '../../web/validation.js';

/** A list field: a comma-separated string (a form) or an array (JSON); empty or null = no restriction. */
const list = (max: number) =>
  z
    .union([z.string().max(4_000), z.array(z.string().max(200)).max(max)])
    // null as the key's JSON shows a lifted limit (`"allowed_models": null`): sent back, it lifts it.
    .nullable()
    .optional()
    .transform((v) => {
      const items = (typeof v === 'string' ? v.split(',') : (v ?? [])).map((s) => s.trim()).filter(Boolean);
      return items.length === 0 ? null : [...new Set(items)];
    })
    .refine((v) => v === null || v.length <= max, `must name at most ${max} entries`);

/** A number field given as form text or JSON number; empty = none. */
const optionalNumber = (schema: z.ZodNumber) =>
  z
    .union([z.number(), z.string().max(32)])
    .optional()
    .nullable()
    .transform((v, ctx) => {
      if (v === undefined || v === null || (typeof v === 'string' && v.trim() === '')) return null;
      // Plain decimal text only: Number() would also read '0x10', '0b11' and '1e3'.
      if (typeof v === 'string' && !/^-?\d+(\.\d+)?$/.test(v.trim())) {
        ctx.addIssue({ code: 'custom', message: 'must be a number written in decimal digits' });
        return z.NEVER;
      }
      const n = typeof v === 'number' ? v : Number(v.trim());
      const checked = schema.safeParse(n, inPlainWords);
      if (!checked.success) {
        ctx.addIssue({ code: 'custom', message: checked.error.issues[0]?.message ?? 'must be a number' });
        return z.NEVER;
      }
      return checked.data;
    });

/** Fields of the create and update forms; any other field is refused (a misspelt limit must not be dropped). */
export const keyForm = z.strictObject({
  // NUL and half surrogate pairs are refused for every body before any route (web/validation.ts refuseUnstorableText).
  name: z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters'),
  allowed_models: list(100),
  allowed_regions: list(20),
  // Kept to the nano-USD, as the Management API's (docs/keys.md): finer is refused, not rounded.
  budget_limit: usdAmountOrNoneUpTo(9)
    .optional()
    .transform((v) => v ?? null),
  budget_period: z
    .union([z.enum(budgetPeriods, { message: `must be one of ${budgetPeriods.join(', ')}` }), z.literal('')])
    .nullable()
    .optional()
    .transform((v) => (v ? v : null)),
  rate_limit_rpm: optionalNumber(
    z.number({ message: 'must be a whole number' }).int('must be a whole number').min(1, 'must be at least 1').max(1_000_000),
  ),
});

/** The parsed form. */
export type KeyForm = z.infer<typeof keyForm>;

/** Refuses names the catalogue does not know (the same rule as the Management API). */
export function checkAgainstCatalogue(catalogue: Catalogue, form: KeyForm): void {
  const known = new Set(catalogue.suppliers.map((s) => s.region));
  const issues = [
    ...(form.allowed_models ?? [])
      .map((m, i) => [m, i] as const)
      .filter(([m]) => m !== 'auto' && !catalogue.routes.has(m))
      .map(([m, i]) => ({ loc: ['body', 'allowed_models', i], msg: `unknown model "${m}"`, type: 'unknown_model' })),
    ...(form.allowed_regions ?? [])
      .map((r, i) => [r.toUpperCase(), i] as const)
      .filter(([r]) => !known.has(r))
      .map(([r, i]) => ({
        loc: ['body', 'allowed_regions', i],
        msg: `no supplier is in region "${r}" (known: ${[...known].join(', ')})`,
        type: 'unknown_region',
      })),
  ];
  if (issues.length > 0) throw validationError(issues);
}

/**
 * An update's body over the key's current values: a field the body leaves out keeps its value, and
 * only a field sent empty (or null) lifts its limit. A browser's form sends every field; a JSON
 * client renaming a key (`{action: "update", name}`) would otherwise lift its budget, rate limit
 * and model list without a word.
 */
export function overCurrentValues(key: KeyRecord, body: unknown): Record<string, unknown> {
  const current = {
    name: key.name,
    allowed_models: key.allowedModels ?? '',
    allowed_regions: key.allowedRegions ?? '',
    budget_limit: key.budgetLimitUsd ?? '',
    budget_period: key.budgetPeriod ?? '',
    rate_limit_rpm: key.rateLimitRpm ?? '',
  };
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return current;
  // `action` chose the update (the page's form sends it beside the fields); it is no key field.
  const { action: _action, ...fields } = body as Record<string, unknown>;
  return { ...current, ...fields };
}

/** The form as repository fields; a budget without a period is monthly (docs/keys.md). */
export function toKeyFields(
  form: KeyForm,
): Required<Pick<KeyPatch, 'name' | 'allowedModels' | 'allowedRegions' | 'budgetLimitUsd' | 'budgetPeriod' | 'rateLimitRpm'>> {
  const period: BudgetPeriod | null = form.budget_limit === null ? form.budget_period : (form.budget_period ?? 'monthly');
  return {
    name: form.name,
    allowedModels: form.allowed_models,
    allowedRegions: form.allowed_regions?.map((r) => r.toUpperCase()) ?? null,
    budgetLimitUsd: form.budget_limit,
    budgetPeriod: period,
    rateLimitRpm: form.rate_limit_rpm,
  };
}

/** Refusal for a key Kubernetes owns: changed with kubectl only. */
export function kubernetesOwned(keyNumber: number): ApiError {
  return new ApiError('conflict', {
    humanMessage: `Key ${keyNumber} is owned by a Kubernetes ManagedKey; change it with kubectl (it is shown here read-only)`,
  });
}
