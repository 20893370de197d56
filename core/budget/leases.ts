// Reservation leases (docs/reliability.md "A gateway killed with requests in flight").
//
// Every reservation the enforcement script makes is also written, on the same counter, under a
// lease field named for the minute its lease ends and the bucket it was counted in:
// `lease:<end minute>:<bucket>` holds the sum of the reservations of that minute and bucket
// still in flight. (A wallet mirror is a plain number, so its leases are a hash beside it,
// `funds-leases:{payer}`, with bucket 0.) A settlement takes its reservation back from its lease
// field; a lease still there after its end belongs to a gateway that died (`kill -9`, an
// out-of-memory kill, a lost node) and is given back to the counter — and to the wallet — by the
// next enforcement that reads it. A settlement that arrives after its lease was given back
// (a request outliving its lease) charges only its actual cost. So a reservation is held at
// most until its lease ends, and counted once either way.
//
// One field per minute and bucket, not per request: a busy key holds as many lease fields as
// there are distinct end minutes among its requests in flight (one or two under a steady load),
// so reading them costs the enforcement script a few fields, not one per request.

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

/** The counter-hash field holding the in-flight reservations whose lease ends at `endMinute`, counted in `bucket`. */
export function leaseField(endMinute: number, bucket: number): string {
  return `${leasePrefix}${endMinute}:${bucket}`;
}

/** The end minute and bucket of a lease field, or null for any other field. */
export function parseLeaseField(field: string): { endMinute: number; bucket: number } | null {
  if (!field.startsWith(leasePrefix)) return null;
  const [end, bucket, extra] = field.slice(leasePrefix.length).split(':');
  if (extra !== undefined || !end || !bucket || !/^\d+$/.test(end) || !/^\d+$/.test(bucket)) return null;
  return { endMinute: Number(end), bucket: Number(bucket) };
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
