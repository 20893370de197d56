import { isDeepStrictEqual } from 'node:util';
import type { BudgetUsage } from '../../../core/budget/index.js';
import { credentialKindOf, type BudgetPeriod, type KeyPatch, type KeyRecord, type KeyStatus } from '../../../core/keys/index.js';
import { kubeTime, mergeConditions, unresolvablePolicy, type ConditionUpdate } from '../kube/conditions.js';
import type { ManagedKeySpec, ManagedKeyStatus } from './resource.js';

// Pure decisions of the ManagedKey controller: from what was observed to what to do. The
// reconciler (reconciler.ts) only reads, calls these, and writes.

/** The key row fields a spec determines (a ManagedKey is never `revoked`: it is deleted). */
export type DesiredKey = Pick<
  KeyRecord,
  'name' | 'allowedModels' | 'allowedRegions' | 'budgetLimitUsd' | 'budgetPeriod' | 'rateLimitRpm' | 'metadata' | 'payerId'
> & {
  status: Extract<KeyStatus, 'active' | 'suspended'>;
};

/** Spec → key row (docs/crds.md, "Maps to"). The row is named `<namespace>/<name>`. */
export function desiredKey(namespace: string, name: string, spec: ManagedKeySpec): DesiredKey {
  return {
    name: `${namespace}/${name}`,
    allowedModels: spec.allowedModels ?? null,
    allowedRegions: spec.allowedRegions ?? null,
    budgetLimitUsd: spec.budget ? Number(spec.budget.limitUsd) : null,
    budgetPeriod: spec.budget ? (spec.budget.period.toLowerCase() as BudgetPeriod) : null,
    rateLimitRpm: spec.requestsPerMinute ?? null,
    metadata: spec.attributes ?? {},
    payerId: spec.payer ?? null,
    status: spec.state === 'Suspended' ? 'suspended' : 'active',
  };
}

/** The changes that bring a row to the desired fields, or undefined when it already matches. */
export function keyChanges(row: KeyRecord, desired: DesiredKey): KeyPatch | undefined {
  const patch: KeyPatch = {};
  for (const field of Object.keys(desired) as (keyof DesiredKey)[]) {
    if (!isDeepStrictEqual(row[field], desired[field])) Object.assign(patch, { [field]: desired[field] });
  }
  return Object.keys(patch).length > 0 ? patch : undefined;
}

/** The Secret as observed: absent, someone else's, or ours (with the key it holds, if valid). */
export type SecretObservation = { kind: 'missing' } | { kind: 'foreign' } | { kind: 'owned'; apiKey: string | undefined };

/** What to do about the Secret. */
export type SecretPlan = { action: 'create' } | { action: 'rewrite' } | { action: 'use'; apiKey: string } | { action: 'conflict' };

/**
 * The Secret is where the key's secret lives; the row holds only its hash. So the Secret is
 * written first and the row follows it: a crash between the two leaves a Secret whose key the
 * next reconcile hashes into the row — never a row whose secret nobody has. A missing Secret
 * (never written, or deleted by someone) gets a new key, which rotates the row's hash; a
 * Secret of ours that no longer holds a valid key is rewritten the same way. A Secret we do
 * not own is left alone.
 */
export function planSecret(observed: SecretObservation): SecretPlan {
  switch (observed.kind) {
    case 'missing':
      return { action: 'create' };
    case 'foreign':
      return { action: 'conflict' };
    case 'owned':
      return observed.apiKey !== undefined && credentialKindOf(observed.apiKey) === 'managed'
        ? { action: 'use', apiKey: observed.apiKey }
        : { action: 'rewrite' };
    default: {
      const unreachable: never = observed;
      throw new Error(`unknown secret observation ${JSON.stringify(unreachable)}`);
    }
  }
}

/** What to do about the key row, given the hash of the key the Secret holds. */
export type RowPlan = { action: 'create' } | { action: 'update'; rotate: boolean; patch: KeyPatch | undefined } | { action: 'none' };

/** Row missing → create; otherwise rotate the hash to the Secret's key and/or apply spec changes. */
export function planRow(row: KeyRecord | undefined, secretHash: string, desired: DesiredKey): RowPlan {
  if (!row) return { action: 'create' };
  const rotate = row.secretHash !== secretHash;
  const patch = keyChanges(row, desired);
  return rotate || patch ? { action: 'update', rotate, patch } : { action: 'none' };
}

/** Names of the spec the catalogue does not know; undefined when the operator has no catalogue. */
export interface UnresolvedNames {
  models: string[];
  regions: string[];
}

/** Allowed models and regions the catalogue lacks (`auto` is always a model). */
export function unresolvedNames(
  spec: ManagedKeySpec,
  catalogue: { models: ReadonlySet<string>; regions: ReadonlySet<string> },
): UnresolvedNames {
  return {
    models: (spec.allowedModels ?? []).filter((m) => m !== 'auto' && !catalogue.models.has(m)),
    regions: (spec.allowedRegions ?? []).filter((r) => !catalogue.regions.has(r)),
  };
}

/** Everything the status is decided from. */
export interface StatusInputs {
  generation: number;
  previous: ManagedKeyStatus | undefined;
  now: Date;
  secretName: string;
  /** Set when the spec could not be parsed. */
  invalidSpec?: string;
  secretConflict: boolean;
  /** The row as it is after this reconcile. */
  key: KeyRecord | undefined;
  unresolved: UnresolvedNames | undefined;
  usage: BudgetUsage | undefined;
}

const usd = (value: number) => value.toFixed(6);

function budgetStatus(key: KeyRecord | undefined, usage: BudgetUsage | undefined): ManagedKeyStatus['budget'] {
  if (!key || key.budgetLimitUsd === null || !usage) return undefined;
  return {
    usedUsd: usd(usage.usedUsd),
    remainingUsd: usd(usage.remainingUsd ?? Math.max(0, key.budgetLimitUsd - usage.usedUsd)),
    ...(usage.resetsAt && { resetsAt: kubeTime(usage.resetsAt) }),
  };
}

/** The status conditions (docs/crds.md): Ready, Provisioned, SecretSynced, PolicyResolved, BudgetExhausted. */
function conditionsOf(inputs: StatusInputs): ConditionUpdate[] {
  const { key, invalidSpec, secretConflict, unresolved, usage, secretName } = inputs;
  const provisioned: ConditionUpdate = invalidSpec
    ? { type: 'Provisioned', status: 'False', reason: 'InvalidSpec', message: invalidSpec }
    : key
      ? { type: 'Provisioned', status: 'True', reason: 'KeyProvisioned', message: `key ${key.id} matches the spec` }
      : {
          type: 'Provisioned',
          status: 'False',
          reason: secretConflict ? 'SecretConflict' : 'Pending',
          message: secretConflict ? 'the key is not created while its Secret belongs to something else' : 'the key is not written yet',
        };
  const secretSynced: ConditionUpdate = secretConflict
    ? {
        type: 'SecretSynced',
        status: 'False',
        reason: 'SecretConflict',
        message: `Secret ${secretName} exists and is not owned by this ManagedKey; it is left untouched`,
      }
    : key
      ? { type: 'SecretSynced', status: 'True', reason: 'SecretWritten', message: `the key is in Secret ${secretName}` }
      : { type: 'SecretSynced', status: 'False', reason: 'Pending', message: 'the Secret is not written yet' };
  const problems = unresolved ? [...unresolved.models.map((m) => `model "${m}"`), ...unresolved.regions.map((r) => `region "${r}"`)] : [];
  const policyResolved: ConditionUpdate =
    invalidSpec || !unresolved
      ? unresolvablePolicy(invalidSpec)
      : problems.length > 0
        ? { type: 'PolicyResolved', status: 'False', reason: 'UnknownNames', message: `the catalogue has no ${problems.join(', ')}` }
        : { type: 'PolicyResolved', status: 'True', reason: 'Resolved', message: 'every allowed model and region is in the catalogue' };
  const exhausted: ConditionUpdate = usage?.exhausted
    ? {
        type: 'BudgetExhausted',
        status: 'True',
        reason: 'LimitReached',
        message: 'the period spend reached the limit; requests are refused until the reset',
      }
    : {
        type: 'BudgetExhausted',
        status: 'False',
        reason: key?.budgetLimitUsd === null || key === undefined ? 'NoBudget' : 'WithinBudget',
        message: '',
      };
  const ready = provisioned.status === 'True' && secretSynced.status === 'True';
  const readyCondition: ConditionUpdate = ready
    ? {
        type: 'Ready',
        status: 'True',
        reason: key?.status === 'suspended' ? 'Suspended' : 'Ready',
        message: key?.status === 'suspended' ? 'the key is served as suspended: requests are refused' : 'the gateway accepts the key',
      }
    : {
        type: 'Ready',
        status: 'False',
        reason: provisioned.status === 'False' ? provisioned.reason : secretSynced.reason,
        message: provisioned.status === 'False' ? provisioned.message : secretSynced.message,
      };
  return [readyCondition, provisioned, secretSynced, policyResolved, exhausted];
}

/** The status to write, reusing transition times of unchanged conditions. */
export function managedKeyStatus(inputs: StatusInputs): ManagedKeyStatus {
  const budget = budgetStatus(inputs.key, inputs.usage);
  return {
    observedGeneration: inputs.generation,
    ...(inputs.key && { keyId: inputs.key.id }),
    secretName: inputs.secretName,
    ...(budget && { budget }),
    conditions: mergeConditions(inputs.previous?.conditions, conditionsOf(inputs), inputs.generation, inputs.now),
  };
}

/** Whether the status must be written (the API server would ignore an identical write anyway). */
export function statusChanged(previous: ManagedKeyStatus | undefined, next: ManagedKeyStatus): boolean {
  return !isDeepStrictEqual(previous ?? {}, next);
}

/** When budget usage alone is worth a status write (docs/operator.md "Status writes"). */
export interface BudgetStatusThrottle {
  /** Write when the used amount moved by at least this share of the limit (0.01 = 1 %). */
  minChangeShare: number;
  /** Write anyway when the last budget write is older than this. */
  maxAgeMs: number;
}

/**
 * Whether a status change may wait: the only difference from the status in the API is the budget's
 * used and remaining amounts (same reset, same conditions, everything else equal), the used
 * amount moved by less than `minChangeShare` of the limit, and the last write of this object's
 * budget is younger than `maxAgeMs`. At scale, writing usage on every refresh of every key would
 * load etcd with writes nobody reads; a change that matters (exhaustion, a reset, any other
 * field) is always written at once.
 */
export function budgetWriteMayWait(
  previous: ManagedKeyStatus | undefined,
  next: ManagedKeyStatus,
  limitUsd: number | null,
  lastBudgetWriteAgeMs: number,
  throttle: BudgetStatusThrottle,
): boolean {
  if (!previous?.budget || !next.budget || limitUsd === null || limitUsd <= 0) return false;
  if (lastBudgetWriteAgeMs >= throttle.maxAgeMs) return false;
  const sameOtherwise = isDeepStrictEqual(
    { ...previous, budget: { resetsAt: previous.budget.resetsAt } },
    { ...next, budget: { resetsAt: next.budget.resetsAt } },
  );
  if (!sameOtherwise) return false;
  return Math.abs(Number(next.budget.usedUsd) - Number(previous.budget.usedUsd)) < throttle.minChangeShare * limitUsd;
}

/**
 * When to look at the key again for its budget: at the reset (plus a second, so the new period
 * has begun) or after the refresh interval, whichever comes first; undefined without a budget.
 */
export function nextBudgetCheckMs(
  key: KeyRecord | undefined,
  usage: BudgetUsage | undefined,
  now: Date,
  refreshMs: number,
): number | undefined {
  if (!key || key.budgetLimitUsd === null) return undefined;
  const untilReset = usage?.resetsAt ? usage.resetsAt.getTime() - now.getTime() + 1_000 : Number.POSITIVE_INFINITY;
  return Math.max(0, Math.min(refreshMs, untilReset));
}

/** Why a reconcile could not finish, for the Ready condition: the dependency that failed. */
export type InfrastructureReason = 'DatabaseUnavailable' | 'StoreUnavailable' | 'ReconcileError';

/**
 * The status after a reconcile failed on infrastructure (the database, the store): the previous
 * status with Ready set False naming the dependency and the error, every other condition kept,
 * so `kubectl get managedkeys` shows why the key is not up to date while the retry backs off.
 */
export function infrastructureStatus(
  previous: ManagedKeyStatus | undefined,
  reason: InfrastructureReason,
  message: string,
  generation: number,
  now: Date,
): ManagedKeyStatus {
  const others = (previous?.conditions ?? []).filter((c) => c.type !== 'Ready');
  const [ready] = mergeConditions(
    previous?.conditions,
    [{ type: 'Ready', status: 'False', reason, message: message.slice(0, 500) }],
    generation,
    now,
  );
  return { ...previous, conditions: [ready!, ...others] };
}
