import { createHash } from 'node:crypto';
import type { KubernetesObject } from '@kubernetes/client-node';
import { z } from 'zod';
import type { Condition } from '../kube/conditions.js';

/** Where ManagedKeys live in the API (crds/managedkeys.yaml). */
export const managedKeyApi = { group: 'gateway.svc.dev', version: 'v1alpha1', plural: 'managedkeys', kind: 'ManagedKey' } as const;

/** The label on every key Secret the operator writes; the operator watches Secrets by it. */
export const keySecretLabel = { name: 'app.kubernetes.io/managed-by', value: 'svc-gateway-operator' } as const;

/** The operator's finalizer: the key row and its cache entries go before the object does. */
export const managedKeyFinalizer = 'gateway.svc.dev/managed-key-cleanup';

/**
 * The spec as docs/crds.md defines it. The API server validates it against the CRD schema
 * first; parsing again keeps the operator safe from objects the schema let through (an older
 * CRD, a fake server) and applies the schema's defaults.
 */
const managedKeySpecSchema = z.object({
  allowedModels: z.array(z.string().min(1).max(200)).min(1).max(100).optional(),
  allowedRegions: z
    .array(z.string().regex(/^[A-Z][A-Z0-9-]{0,31}$/))
    .min(1)
    .max(20)
    .optional(),
  budget: z
    .object({
      limitUsd: z.string().regex(/^[0-9]{1,10}(\.[0-9]{1,6})?$/, 'must be a decimal string with at most 6 decimals'),
      period: z.enum(['Daily', 'Monthly', 'Rolling']).default('Monthly'),
      windowDays: z.number().int().optional(),
    })
    .refine((b) => Number(b.limitUsd) > 0, { message: 'limitUsd must be more than 0', path: ['limitUsd'] })
    .optional(),
  requestsPerMinute: z.number().int().min(1).max(1_000_000).optional(),
  attributes: z.record(z.string(), z.string()).optional(),
  state: z.enum(['Active', 'Suspended']).default('Active'),
  secretName: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/)
    .max(253)
    .optional(),
  payer: z
    .string()
    .regex(/^(project|org|user|key):[A-Za-z0-9._-]{1,128}$/)
    .optional(),
});

/** A parsed ManagedKey spec with defaults applied. */
export type ManagedKeySpec = z.infer<typeof managedKeySpecSchema>;

/** Budget usage as status shows it: decimal strings, like the spec's limit. */
export interface ManagedKeyBudgetStatus {
  usedUsd: string;
  remainingUsd: string;
  resetsAt?: string;
}

/** The status the operator writes. */
export interface ManagedKeyStatus {
  observedGeneration?: number;
  keyId?: string;
  secretName?: string;
  budget?: ManagedKeyBudgetStatus;
  conditions?: Condition[];
}

/** A ManagedKey as read from the API. */
export interface ManagedKeyObject extends KubernetesObject {
  spec?: unknown;
  status?: ManagedKeyStatus;
}

/** The spec, or what is wrong with it. */
export function parseManagedKeySpec(spec: unknown): { ok: true; spec: ManagedKeySpec } | { ok: false; message: string } {
  const result = managedKeySpecSchema.safeParse(spec ?? {});
  if (result.success) return { ok: true, spec: result.data };
  return { ok: false, message: result.error.issues.map((i) => `spec.${i.path.join('.')}: ${i.message}`).join('; ') };
}

/**
 * The key row's owner marker (KeyRecord.managedBy). The uid makes a re-created object with the
 * same name a new owner; the prefix up to the name finds every incarnation of that name.
 */
export function keyOwnerOf(object: Pick<ManagedKeyObject, 'metadata'>): string {
  return `${keyOwnerPrefix(object.metadata?.namespace ?? '', object.metadata?.name ?? '')}${object.metadata?.uid ?? ''}`;
}

/** The start of every ManagedKey's owner marker: `ManagedKey/<namespace>/<name>/<uid>`. */
export const keyOwnerKindPrefix = 'ManagedKey/';

/** The owner marker prefix of every ManagedKey called `name` in `namespace`. */
export function keyOwnerPrefix(namespace: string, name: string): string {
  return `${keyOwnerKindPrefix}${namespace}/${name}/`;
}

/** The Secret's label and annotation naming its ManagedKey. */
export const managedKeyLabel = 'gateway.svc.dev/managed-key';

/**
 * The value of the Secret's `managedKeyLabel`: the ManagedKey's name, when it fits a label value
 * (at most 63 characters); a longer name (a ManagedKey's may have 253) as its first 52 characters
 * and 10 hex characters of its SHA-256 — the API server refused the Secret whole, and the key never
 * reached its user (outside probe). The annotation of the same name always holds the whole name.
 */
export function managedKeyLabelValue(name: string): string {
  if (name.length <= 63) return name;
  return `${name.slice(0, 52)}-${createHash('sha256').update(name).digest('hex').slice(0, 10)}`;
}

/** The Secret the key is written to: spec.secretName, default `<name>-key`. */
export function secretNameOf(name: string, spec: Pick<ManagedKeySpec, 'secretName'>): string {
  return spec.secretName ?? `${name}-key`;
}
