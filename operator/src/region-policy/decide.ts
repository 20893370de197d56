import { isDeepStrictEqual } from 'node:util';
import type { RegionPolicyRecord } from '../../../core/regions/index.js';
import { mergeConditions, unresolvablePolicy, type ConditionUpdate } from '../kube/conditions.js';
import type { RegionPolicySpec, RegionPolicyStatus } from './resource.js';

// Pure decisions of the RegionPolicy controller; reconciler.ts does the reading and writing.

/** The record the gateway routes by, from a policy's name and spec. */
export function policyRecord(name: string, spec: RegionPolicySpec): RegionPolicyRecord {
  return {
    name,
    regions: spec.regions.map((r) => ({ region: r.region, allowedSuppliers: [...r.allowedSuppliers] })),
    failurePolicy: spec.failurePolicy,
  };
}

/**
 * What the policy names that the catalogue contradicts: suppliers it does not have, and
 * suppliers listed under a region other than their own (they could never serve there).
 */
export function policyProblems(spec: RegionPolicySpec, supplierRegions: ReadonlyMap<string, string>): string[] {
  const problems: string[] = [];
  for (const rule of spec.regions) {
    for (const supplier of rule.allowedSuppliers) {
      const region = supplierRegions.get(supplier);
      if (region === undefined) problems.push(`supplier "${supplier}" (region ${rule.region}) is not in the catalogue`);
      else if (region !== rule.region) problems.push(`supplier "${supplier}" is in region ${region}, not ${rule.region}`);
    }
  }
  return problems;
}

/** Everything the status is decided from. */
export interface PolicyStatusInputs {
  generation: number;
  previous: RegionPolicyStatus | undefined;
  now: Date;
  invalidSpec?: string;
  /** Catalogue contradictions; undefined when the operator has no catalogue. */
  problems: string[] | undefined;
}

/** Conditions Ready, Provisioned and PolicyResolved (docs/crds.md). */
export function regionPolicyStatus(inputs: PolicyStatusInputs): RegionPolicyStatus {
  const { invalidSpec, problems } = inputs;
  const provisioned: ConditionUpdate = invalidSpec
    ? { type: 'Provisioned', status: 'False', reason: 'InvalidSpec', message: invalidSpec }
    : { type: 'Provisioned', status: 'True', reason: 'PolicyStored', message: 'the gateways route by this policy' };
  const resolved: ConditionUpdate =
    invalidSpec || problems === undefined
      ? unresolvablePolicy(invalidSpec)
      : problems.length > 0
        ? { type: 'PolicyResolved', status: 'False', reason: 'UnknownSuppliers', message: problems.join('; ') }
        : { type: 'PolicyResolved', status: 'True', reason: 'Resolved', message: 'every supplier is in the catalogue, in its region' };
  const ready: ConditionUpdate =
    provisioned.status === 'True'
      ? { type: 'Ready', status: 'True', reason: 'Ready', message: 'the gateways route by this policy' }
      : { type: 'Ready', status: 'False', reason: provisioned.reason, message: provisioned.message };
  return {
    observedGeneration: inputs.generation,
    conditions: mergeConditions(inputs.previous?.conditions, [ready, provisioned, resolved], inputs.generation, inputs.now),
  };
}

/** Whether the status must be written. */
export function policyStatusChanged(previous: RegionPolicyStatus | undefined, next: RegionPolicyStatus): boolean {
  return !isDeepStrictEqual(previous ?? {}, next);
}
