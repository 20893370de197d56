/** What happens when no allowed supplier can serve a request: the only choice is to fail. */
export const regionFailurePolicies = ['HardFail'] as const;
/** One failure policy. */
export type RegionFailurePolicy = (typeof regionFailurePolicies)[number];

/** One rule of a policy: in `region`, only these suppliers may serve requests. */
export interface RegionRule {
  region: string;
  allowedSuppliers: string[];
}

/**
 * A region policy as the operator writes it and the gateway reads it: the contract between
 * the RegionPolicy resource and routing. Plain data, no Kubernetes types.
 */
export interface RegionPolicyRecord {
  /** The RegionPolicy's name (cluster-scoped, so unique). */
  name: string;
  regions: RegionRule[];
  failurePolicy: RegionFailurePolicy;
}

/**
 * The routing restriction of all policies together: for each region some policy lists, the
 * suppliers allowed there. Several policies listing one region allow the intersection (the
 * strictest wins); a region no policy lists is unrestricted. Immutable, built once per change,
 * so the gateway's candidate selection reads it without I/O.
 */
export class RegionPolicies {
  /** No policy at all: every region unrestricted. */
  static readonly none = new RegionPolicies(new Map());

  private constructor(private readonly allowed: ReadonlyMap<string, ReadonlySet<string>>) {}

  /** Combines policy records into one restriction. */
  static from(records: readonly RegionPolicyRecord[]): RegionPolicies {
    const allowed = new Map<string, Set<string>>();
    for (const record of records) {
      for (const rule of record.regions) {
        const listed = new Set(rule.allowedSuppliers);
        const previous = allowed.get(rule.region);
        allowed.set(rule.region, previous ? new Set([...previous].filter((s) => listed.has(s))) : listed);
      }
    }
    return new RegionPolicies(allowed);
  }

  /** Suppliers allowed in `region`, or undefined when no policy restricts it. */
  allowedSuppliers(region: string): ReadonlySet<string> | undefined {
    return this.allowed.get(region);
  }

  /** Whether `supplier`, located in `region`, may serve requests under these policies. */
  allows(region: string, supplier: string): boolean {
    const allowed = this.allowed.get(region);
    return allowed === undefined || allowed.has(supplier);
  }

  /** The restricted regions, for messages and diagnostics. */
  restrictedRegions(): string[] {
    return [...this.allowed.keys()].sort();
  }
}
