// How one request's enforcement maps onto store scripts (docs/architecture.md "Store sharding").
//
// On a single Redis (and the in-process store) everything a request reserves — its key's rate
// window and budget, each spend group, the payer's wallet — is checked and reserved by one
// `enforce_request` call, atomically. On Redis Cluster those keys live on the shards of their
// entities (the key, `org:5`, `user:3`, the payer), so the same script runs once per shard tag,
// all at once; when any shard refuses, the shards that admitted the request are given back
// what they reserved (a withdrawal, exactly once by its marker) and the first refusal in the
// single-store order (rate, budget, spend groups, wallet) is the answer. No counter can be
// overspent by concurrent requests: each is still checked and reserved atomically on its own
// shard before the request is admitted, and each part is settled (or withdrawn) on its own. What a refused request reserved elsewhere is held for the moment
// between its reservation and its withdrawal, so a concurrent request near a cap may be refused
// where a single store would have admitted it — never the other way round.
import {
  enforceRequest,
  leaseField,
  rateWindowMs,
  settleReservation,
  type BudgetWindow,
  type EnforcementVerdict,
  type LeaseGenerations,
} from '../../../core/budget/index.js';
import { shardTag, tagOf, type Store } from '../../../core/store/index.js';
import type { HeldLease } from './spend-recovery.js';

/** Everything one request reserves, before it is split per shard. */
export interface ReservationPlan {
  requestId: string;
  reserveNano: number;
  /** The minute the enforcement ran (by this gateway's clock): leases ended before it are given back. */
  nowMinute: number;
  /** The minute this reservation's lease ends (core/budget/leases.ts). */
  leaseEndMinute: number;
  /** This gateway's name on its leases (SpendRecovery.leaseHolder). */
  leaseHolder: string;
  /** The key's rate window, when it has a rate limit. */
  rate: { key: string; rpm: number } | null;
  /** The key's own budget, when it has one. */
  budget: { window: BudgetWindow; capNano: number } | null;
  /** The payer's wallet mirror and its leases hash, when a payer pays. */
  wallet: { key: string; leasesKey: string; creditNano: number } | null;
  /** Spend groups in enforcement order (verdicts name them by this index). */
  groups: readonly { window: BudgetWindow; capKey: string }[];
}

/** The part of a plan on one shard (the whole plan on a single store). */
export interface ReservationPart {
  /** The shard tag every key of the part carries; null on a single store. */
  tag: string | null;
  rate: ReservationPlan['rate'];
  budget: ReservationPlan['budget'];
  wallet: ReservationPlan['wallet'];
  /** The part's groups with their index in the plan. */
  groups: { index: number; window: BudgetWindow; capKey: string }[];
}

/** The plan as one part (single store) or one part per shard tag, in enforcement order. */
export function reservationParts(plan: ReservationPlan, sharded: boolean): ReservationPart[] {
  const groups = plan.groups.map((group, index) => ({ index, ...group }));
  if (!sharded) return [{ tag: null, rate: plan.rate, budget: plan.budget, wallet: plan.wallet, groups }];
  const parts = new Map<string, ReservationPart>();
  const partOf = (key: string): ReservationPart => {
    const tag = tagOf(key);
    let part = parts.get(tag);
    if (!part) {
      part = { tag, rate: null, budget: null, wallet: null, groups: [] };
      parts.set(tag, part);
    }
    return part;
  };
  if (plan.rate) partOf(plan.rate.key).rate = plan.rate;
  if (plan.budget) partOf(plan.budget.window.counterKey).budget = plan.budget;
  for (const group of groups) partOf(group.window.counterKey).groups.push(group);
  if (plan.wallet) partOf(plan.wallet.key).wallet = plan.wallet;
  return [...parts.values()];
}

/** A key the script is given but never touches (its part has no such component), on the part's shard. */
function unusedKey(part: ReservationPart): string {
  return part.tag === null ? 'unused' : `unused:${shardTag(part.tag)}`;
}

/** Store keys and arguments of `enforce_request` for a part (core/budget/scripts.ts has the layout). */
function reserveCall(plan: ReservationPlan, part: ReservationPart): [string[], (string | number)[]] {
  const unused = unusedKey(part);
  const { rate, budget, wallet } = part;
  const keys = [
    rate?.key ?? unused,
    budget?.window.counterKey ?? unused,
    wallet?.key ?? unused,
    wallet?.leasesKey ?? unused,
    ...part.groups.flatMap((group) => [group.window.counterKey, group.capKey]),
  ];
  const args = [
    rate?.rpm ?? 0,
    rateWindowMs,
    plan.requestId,
    plan.reserveNano,
    budget ? budget.capNano : -1,
    budget?.window.minBucket ?? 0,
    budget?.window.bucket ?? 0,
    budget?.window.ttlMs ?? 0,
    wallet ? 1 : 0,
    part.groups.length,
    wallet?.creditNano ?? 0,
    plan.nowMinute,
    plan.leaseEndMinute,
    plan.leaseHolder,
    ...part.groups.map((group) => group.window.ttlMs),
  ];
  return [keys, args];
}

/** A part's verdict in the plan's terms (a group named by its index in the plan). */
function inPlanTerms(part: ReservationPart, verdict: EnforcementVerdict): EnforcementVerdict {
  if (verdict.kind !== 'group_budget_exceeded' && verdict.kind !== 'group_budget_unknown') return verdict;
  return { ...verdict, group: part.groups[verdict.group]!.index };
}

/** The lease fields a part's reservation was made under, on the generations its script read (core/budget/leases.ts). */
function leaseFields(plan: ReservationPlan, part: ReservationPart, generations: LeaseGenerations) {
  const lease = (bucket: number, generation: string) => leaseField(plan.leaseEndMinute, bucket, plan.leaseHolder, generation);
  return {
    budget: part.budget ? lease(part.budget.window.bucket, generations.budget) : '',
    wallet: part.wallet ? lease(0, generations.wallet) : '',
    groups: part.groups.map((_, i) => lease(0, generations.groups[i] ?? '')),
  };
}

/** Where a part holds money: each counter (or wallet mirror) with its reservation's lease field (for SpendRecovery.hold). */
export function moneyLeases(plan: ReservationPlan, part: ReservationPart, generations: LeaseGenerations): HeldLease[] {
  const fields = leaseFields(plan, part, generations);
  return [
    ...(part.budget ? [{ key: part.budget.window.counterKey, field: fields.budget }] : []),
    ...(part.wallet ? [{ key: part.wallet.key, field: fields.wallet }] : []),
    ...part.groups.map((group, i) => ({ key: group.window.counterKey, field: fields.groups[i]! })),
  ];
}

/**
 * How long a settlement's marker keeps a retried settlement from counting twice: past the lease
 * (a settlement applied again while its lease field holds other requests' reservations would
 * take those), and at least ten minutes.
 */
export function settlementMarkerTtlMs(plan: Pick<ReservationPlan, 'leaseEndMinute' | 'nowMinute'>): number {
  return Math.max(10 * 60_000, (plan.leaseEndMinute - plan.nowMinute + 1) * 60_000);
}

/**
 * Store keys and arguments of `settle_reservation` for a part: a settlement with the actual
 * cost, or (`withdrawAttempt` set) a withdrawal of everything the part reserved, rate place included.
 */
function settleCall(
  plan: ReservationPlan,
  whole: ReservationPart,
  generations: LeaseGenerations,
  actualNano: number,
  withdrawAttempt?: number,
  skipped: ReadonlySet<string> = new Set(),
): [string[], (string | number)[]] {
  const fields = leaseFields(plan, whole, generations);
  // Counters rebuilt since this settlement was owed already count its request (SpendRecovery): left alone.
  const groups = whole.groups
    .map((group, i) => ({ group, lease: fields.groups[i]! }))
    .filter(({ group }) => !skipped.has(group.window.counterKey));
  const part: ReservationPart = {
    ...whole,
    budget: whole.budget && !skipped.has(whole.budget.window.counterKey) ? whole.budget : null,
    wallet: whole.wallet && !skipped.has(whole.wallet.key) ? whole.wallet : null,
    groups: groups.map(({ group }) => group),
  };
  const leases = {
    budget: part.budget ? fields.budget : '',
    wallet: part.wallet ? fields.wallet : '',
    groups: groups.map(({ lease }) => lease),
  };
  const unused = unusedKey(part);
  const onShard = part.tag === null ? '' : `${shardTag(part.tag)}:`;
  const marker =
    withdrawAttempt === undefined ? `settled:${onShard}${plan.requestId}` : `withdrawn:${onShard}${plan.requestId}:${withdrawAttempt}`;
  const keys = [
    part.budget?.window.counterKey ?? unused,
    part.wallet?.key ?? unused,
    marker,
    part.wallet?.leasesKey ?? unused,
    ...part.groups.map((group) => group.window.counterKey),
  ];
  const args: (string | number)[] = [
    part.budget?.window.bucket ?? 0,
    plan.reserveNano,
    actualNano,
    part.budget ? 1 : 0,
    part.wallet ? 1 : 0,
    settlementMarkerTtlMs(plan),
    part.groups.length,
    leases.budget,
    leases.wallet,
    ...leases.groups,
  ];
  if (withdrawAttempt !== undefined && part.rate) {
    keys.push(part.rate.key);
    args.push(plan.requestId);
  }
  return [keys, args];
}

/** A lease field no counter holds: a settlement given it charges the actual cost (core/budget/leases.ts). */
export const noLease = 'lease:none';

/**
 * Settles a request of a key on the key's newer budget counter (key-flights.ts): ends the lease
 * its rebuild carried the request in under (`field`), or — `noLease` — charges the actual cost.
 * Exactly once by its own marker: the request's settlement on the counter it reserved on has its
 * own. A counter not (yet) in the store is left alone: its rebuild will read the request's record.
 */
export async function settleOnSuccessor(
  store: Store,
  successor: { counterKey: string; bucket: number },
  field: string,
  request: { requestId: string; reserveNano: number; actualNano: number; markerTtlMs: number },
): Promise<void> {
  const onShard = store.sharded ? `${shardTag(tagOf(successor.counterKey))}:` : '';
  const unused = store.sharded ? `unused:${shardTag(tagOf(successor.counterKey))}` : 'unused';
  const marker = `settled:${onShard}successor:${successor.counterKey}:${request.requestId}`;
  const keys = [successor.counterKey, unused, marker, unused];
  const args = [successor.bucket, request.reserveNano, request.actualNano, 1, 0, request.markerTtlMs, 0, field, ''];
  await store.runScript(settleReservation, keys, args);
}

/** What reserving needs besides the store: a way to hand back what a refused request reserved. */
export interface Withdrawals {
  /**
   * Runs a withdrawal until the store takes it (SpendRecovery.settle), holding the part's money
   * (under its leases) meanwhile; `run` is told the counters to leave alone (rebuilt meanwhile).
   */
  withdraw(part: ReservationPart, generations: LeaseGenerations, run: (skipped: ReadonlySet<string>) => Promise<void>): Promise<void>;
}

/** A plan's verdict and, when admitted, the generations each part's reservation was leased on (for its settlement). */
export interface Reserved {
  verdict: EnforcementVerdict;
  generations: LeaseGenerations[];
}

const noGenerations: LeaseGenerations = { budget: '', wallet: '', groups: [] };
const generationsOf = (verdict: EnforcementVerdict) => (verdict.kind === 'admitted' ? verdict.generations : noGenerations);

/**
 * Reserves a plan: one script on a single store; on a sharded store one per shard at once, with
 * the shards that admitted a refused request withdrawn. `attempt` tells withdrawals of retried
 * reservations (after a counter rebuild) apart.
 */
export async function reservePlan(
  store: Store,
  plan: ReservationPlan,
  parts: readonly ReservationPart[],
  attempt: number,
  withdrawals: Withdrawals,
): Promise<Reserved> {
  if (parts.length === 1) {
    const verdict = inPlanTerms(parts[0]!, await store.runScript(enforceRequest, ...reserveCall(plan, parts[0]!)));
    return { verdict, generations: [generationsOf(verdict)] };
  }
  const outcomes = await Promise.allSettled(parts.map((part) => store.runScript(enforceRequest, ...reserveCall(plan, part))));
  const verdictOf = (i: number) =>
    outcomes[i]!.status === 'fulfilled' ? (outcomes[i] as PromiseFulfilledResult<EnforcementVerdict>).value : undefined;
  const admitted = (i: number) => verdictOf(i)?.kind === 'admitted';
  const generations = parts.map((_, i) => {
    const v = verdictOf(i);
    return v ? generationsOf(v) : noGenerations;
  });
  const refused = outcomes.findIndex((_, i) => !admitted(i));
  if (refused === -1) return { verdict: verdictOf(0)!, generations };
  // A withdrawal the store refuses stays owed and is retried until taken (its part's money held
  // meanwhile); the request's answer is the refusal either way.
  await Promise.all(
    parts.map((part, i) =>
      admitted(i)
        ? withdrawals
            .withdraw(part, generations[i]!, (skipped) =>
              store.runScript(settleReservation, ...settleCall(plan, part, generations[i]!, 0, attempt, skipped)),
            )
            .catch(() => undefined)
        : Promise.resolve(),
    ),
  );
  const outcome = outcomes[refused]!;
  if (outcome.status === 'rejected') throw outcome.reason;
  return { verdict: inPlanTerms(parts[refused]!, outcome.value), generations };
}

/**
 * Settles one part with the actual cost (exactly once: its marker). Each part is settled — and,
 * when its shard refuses, retried — on its own: a retry of the whole plan would apply again the
 * parts whose markers expired while another shard was down.
 */
export async function settlePart(
  store: Store,
  plan: ReservationPlan,
  part: ReservationPart,
  generations: LeaseGenerations,
  actualNano: number,
  skipped?: ReadonlySet<string>,
): Promise<void> {
  await store.runScript(settleReservation, ...settleCall(plan, part, generations, actualNano, undefined, skipped));
}
