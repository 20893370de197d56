// Reservation leases (docs/reliability.md, "Reservation leases").
//
// Every reservation the enforcement script makes is written twice on each counter it reserves on:
// into the spend bucket, and into a lease field
//
//     lease:<end minute>:<bucket>:<holder>:<generation>
//
// which sums the reservations still in flight that one gateway (the holder) made in that bucket,
// on that generation of the counter, whose lease ends in that minute. A wallet mirror is a plain
// number, so its lease fields (bucket 0) are in a hash beside it, `funds-leases:{payer}`.
//
// - A settlement takes its reservation back from its lease field and gives back what was not
//   spent; a settlement that finds no lease field charges only its actual cost.
// - A lease field still there after its minute belongs to reservations nobody settled (their
//   gateway was killed): the next enforcement that reads the counter gives them back.
// - A counter (or mirror) rebuilt from PostgreSQL gets a new generation and carries only the
//   rebuilding gateway's own reservations, under their old lease names. A reservation it does
//   not count — another gateway's, or one whose lease name a reservation made after the rebuild
//   would otherwise share — then finds no lease, and is charged its cost once. (Shared names drove
//   a rebuilt counter below its spend and over-credited a wallet: an outside probe, a review.)
//
// One field per minute, bucket, gateway and generation, not per request: a busy key holds about
// one or two lease fields per gateway under a steady load, so the enforcement script reads a few
// fields, not one per request in flight.

import { randomBytes } from 'node:crypto';

const minuteMs = 60_000;

/** Added to a request's own longest life before its reservation may be given back. */
export const leaseMarginMs = 10 * minuteMs;

/** The minute (since the epoch) containing `ms`: leases end, and are compared, in whole minutes. */
export function minuteOf(ms: number): number {
  return Math.floor(ms / minuteMs);
}

/**
 * The minute a reservation's lease ends: past the request's longest possible life (`lifeMs`) and
 * the margin (a settlement's own retries, gateways' clocks a few seconds apart).
 */
export function leaseEndMinute(nowMs: number, lifeMs: number): number {
  return Math.ceil((nowMs + lifeMs + leaseMarginMs) / minuteMs);
}

const leasePrefix = 'lease:';

/** A name for this gateway's leases: letters and digits, unique among the gateways sharing a store. */
export function newLeaseHolder(): string {
  return randomBytes(6).toString('hex');
}

/** A new generation for a counter or mirror put in the store by a rebuild or a load. */
export function newLeaseGeneration(): string {
  return randomBytes(4).toString('hex');
}

/**
 * The counter-hash field (a wallet's leases hash: the mirror's) holding the generation its lease
 * fields are made on; absent on one made before generations, read as `generationOfOld`.
 */
export const generationField = 'gen';
export const generationOfOld = '0';

/**
 * The field of `holder`'s in-flight reservations whose lease ends at `endMinute`, counted in
 * `bucket`, on generation `generation` of its counter. The enforcement script builds the same
 * name (scripts.ts) from the generation it reads; the settlement is given it whole.
 */
export function leaseField(endMinute: number, bucket: number, holder: string, generation: string): string {
  return `${leasePrefix}${endMinute}:${bucket}:${holder}:${generation}`;
}

const leasePattern = /^lease:(\d+):(\d+):[A-Za-z0-9]+:[A-Za-z0-9]+$/;

/** The end minute and bucket of a lease field, or null for any other field. */
export function parseLeaseField(field: string): { endMinute: number; bucket: number } | null {
  const match = leasePattern.exec(field);
  return match ? { endMinute: Number(match[1]), bucket: Number(match[2]) } : null;
}

/** A counter hash read: spend per bucket (lease and in-flight fields left out) and what its ended leases still hold. */
export interface CounterFields {
  buckets: Map<number, number>;
  /** Per bucket, nano-USD of reservations whose lease ended before `nowMinute` and that no settlement took back. */
  abandoned: Map<number, number>;
  /** Those leases' field names. */
  abandonedFields: string[];
}

/**
 * A counter hash's spend per bucket as the next enforcement will count it — the reservations of
 * its ended leases taken out of their buckets — and how much those were in all. For readers that
 * show spend (a key's usage, a spend group's month), so a dead gateway's reservations do not
 * show as spent before the next request gives them back.
 */
export function liveBuckets(raw: Readonly<Record<string, string>>, now: Date): { buckets: Map<number, number>; abandonedNano: number } {
  const { buckets, abandoned } = counterFields(raw, minuteOf(now.getTime()));
  let abandonedNano = 0;
  for (const [bucket, nano] of abandoned) {
    const counted = buckets.get(bucket);
    if (counted === undefined) continue;
    buckets.set(bucket, counted - nano);
    abandonedNano += nano;
  }
  return { buckets, abandonedNano };
}

/**
 * Splits a counter hash into its buckets and its abandoned leases, as the enforcement script
 * does (its Lua twin is in scripts.ts): readers that show spend take the abandoned reservations
 * out, so a key's view is right before the next request gives them back.
 */
export function counterFields(raw: Readonly<Record<string, string>>, nowMinute: number): CounterFields {
  const buckets = new Map<number, number>();
  const abandoned = new Map<number, number>();
  const abandonedFields: string[] = [];
  for (const [field, value] of Object.entries(raw)) {
    if (/^\d+$/.test(field)) {
      buckets.set(Number(field), Number(value));
      continue;
    }
    const lease = parseLeaseField(field);
    if (lease === null || lease.endMinute >= nowMinute) continue;
    abandoned.set(lease.bucket, (abandoned.get(lease.bucket) ?? 0) + Number(value));
    abandonedFields.push(field);
  }
  return { buckets, abandoned, abandonedFields };
}
