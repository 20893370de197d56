/** A status condition in the standard `metav1.Condition` shape. */
export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  observedGeneration: number;
  lastTransitionTime: string;
  reason: string;
  message: string;
}

/** A condition as a reconcile decides it; the transition time is filled in by mergeConditions. */
export type ConditionUpdate = Omit<Condition, 'lastTransitionTime' | 'observedGeneration'>;

/**
 * `PolicyResolved` while the names an object refers to cannot be checked: its spec is invalid, or
 * the operator runs without a catalogue. Both kinds (ManagedKey, RegionPolicy) say it alike.
 */
export function unresolvablePolicy(invalidSpec: string | undefined): ConditionUpdate {
  return invalidSpec
    ? { type: 'PolicyResolved', status: 'Unknown', reason: 'InvalidSpec', message: 'names are not checked until the spec is valid' }
    : {
        type: 'PolicyResolved',
        status: 'Unknown',
        reason: 'NoCatalogue',
        message: 'the operator runs without a catalogue (SVC_CATALOG) and cannot check names',
      };
}

/** RFC 3339 to the second, as the API server writes times. */
export function kubeTime(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/**
 * The new condition list: each decided condition, keeping its previous lastTransitionTime when
 * its status did not change (so an unchanged status stays byte-identical and is not rewritten).
 */
export function mergeConditions(
  previous: readonly Condition[] | undefined,
  updates: readonly ConditionUpdate[],
  generation: number,
  now: Date,
): Condition[] {
  return updates.map((update) => {
    const before = previous?.find((c) => c.type === update.type);
    const lastTransitionTime = before && before.status === update.status ? before.lastTransitionTime : kubeTime(now);
    return { ...update, observedGeneration: generation, lastTransitionTime };
  });
}
