// Reservation leases (docs/reliability.md "A gateway killed with requests in flight").
//
// Every reservation the enforcement script makes is also written, on the same counter, under a
// lease field named for the minute its lease ends, the bucket it was counted in and the gateway
// that holds it: `lease:<end minute>:<bucket>:<holder>` holds the sum of that gateway's
// reservations of that minute and bucket still in flight. (The holder keeps gateways' leases
// apart: a counter rebuilt by one gateway carries only its own reservations' leases, so another's
// settlement must not find — and give back from — a field that is not its own; outside probe.) (A wallet mirror is a plain number, so its leases are a hash beside it,
// `funds-leases:{payer}`, with bucket 0.) A settlement takes its reservation back from its lease
// field; a lease still there after its end belongs to a gateway that died (`kill -9`, an
// out-of-memory kill, a lost node) and is given back to the counter — and to the wallet — by the
// next enforcement that reads it. A settlement that arrives after its lease was given back
// (a request outliving its lease) charges only its actual cost. So a reservation is held at
// most until its lease ends, and counted once either way.
//
// One field per minute, bucket and gateway, not per request: a busy key holds as many lease
// fields as there are gateways times distinct end minutes among its requests in flight (one or
// two per gateway under a steady load), so reading them costs the enforcement script a few
// fields, not one per request.

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

/** The counter-hash field holding `holder`'s in-flight reservations whose lease ends at `endMinute`, counted in `bucket`. */
export function leaseField(endMinute: number, bucket: number, holder: string): string {
  return `${leasePrefix}${endMinute}:${bucket}:${holder}`;
}

const leasePattern = /^lease:(\d+):(\d+):([A-Za-z0-9]+)$/;

/** The end minute, bucket and holder of a lease field, or null for any other field. */
export function parseLeaseField(field: string): { endMinute: number; bucket: number; holder: string } | null {
  const match = leasePattern.exec(field);
  return match ? { endMinute: Number(match[1]), bucket: Number(match[2]), holder: match[3]! } : null;
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
