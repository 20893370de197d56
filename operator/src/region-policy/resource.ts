import type { KubernetesObject } from '@kubernetes/client-node';
import { z } from 'zod';
import { regionFailurePolicies } from '../../../core/regions/index.js';
import type { Condition } from '../kube/conditions.js';

/** Where RegionPolicies live in the API (crds/regionpolicies.yaml); cluster-scoped. */
export const regionPolicyApi = { group: 'gateway.svc.dev', version: 'v1alpha1', plural: 'regionpolicies', kind: 'RegionPolicy' } as const;

/** The operator's finalizer: the policy leaves the gateways before the object goes. */
export const regionPolicyFinalizer = 'gateway.svc.dev/region-policy-cleanup';

/** The spec as docs/crds.md defines it (checked again after the API server's schema). */
const regionPolicySpecSchema = z.object({
  regions: z
    .array(
      z.object({
        region: z.string().regex(/^[A-Z][A-Z0-9-]{0,31}$/),
        allowedSuppliers: z
          .array(z.string().regex(/^[a-z0-9][a-z0-9-]{0,62}$/))
          .min(1)
          .max(100),
      }),
    )
    .min(1)
    .max(64)
    .refine((rules) => new Set(rules.map((r) => r.region)).size === rules.length, 'a region may appear only once'),
  failurePolicy: z.enum(regionFailurePolicies).default('HardFail'),
});

/** A parsed RegionPolicy spec with defaults applied. */
export type RegionPolicySpec = z.infer<typeof regionPolicySpecSchema>;

/** The status the operator writes. */
export interface RegionPolicyStatus {
  observedGeneration?: number;
  conditions?: Condition[];
}

/** A RegionPolicy as read from the API. */
export interface RegionPolicyObject extends KubernetesObject {
  spec?: unknown;
  status?: RegionPolicyStatus;
}

/** The spec, or what is wrong with it. */
export function parseRegionPolicySpec(spec: unknown): { ok: true; spec: RegionPolicySpec } | { ok: false; message: string } {
  const result = regionPolicySpecSchema.safeParse(spec ?? {});
  if (result.success) return { ok: true, spec: result.data };
  return { ok: false, message: result.error.issues.map((i) => `spec.${i.path.join('.')}: ${i.message}`).join('; ') };
}
