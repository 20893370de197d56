// The quality explorer's public snapshot (docs/portal.md "Quality explorer"): per model and
// supplier over the last `days`, across every tenant, metadata only — requests, success rate,
// p50/p95 latency, average tokens. Never a prompt, a completion, a key or a tenant. Pairs with
// fewer than `minRequests` requests are withheld, so a small tenant's traffic cannot be read off
// the public page. Computed at most once a minute per window (it scans the audit log).
import type { Knex } from 'knex';
import { modelObservations } from '../../../../core/usage/index.js';

export interface QualityRow {
  model: string;
  supplier: string;
  requests: number;
  success_rate: number;
  p50_latency_ms: number | null;
  p95_latency_ms: number | null;
  avg_input_tokens: number;
  avg_output_tokens: number;
}

export interface QualitySnapshot {
  generated_at: string;
  days: number;
  min_requests: number;
  rows: QualityRow[];
  /** Model and supplier pairs withheld for having too few requests. */
  withheld: number;
}

const cacheMs = 60_000;

export class QualitySnapshots {
  private readonly cache = new Map<string, { at: number; snapshot: Promise<QualitySnapshot> }>();

  constructor(
    private readonly knex: Knex,
    private readonly clock: () => number,
  ) {}

  get(days: number, minRequests: number): Promise<QualitySnapshot> {
    const key = `${days}:${minRequests}`;
    const hit = this.cache.get(key);
    if (hit && this.clock() - hit.at < cacheMs) return hit.snapshot;
    const snapshot = this.compute(days, minRequests);
    this.cache.set(key, { at: this.clock(), snapshot });
    snapshot.catch(() => this.cache.delete(key));
    return snapshot;
  }

  private async compute(days: number, minRequests: number): Promise<QualitySnapshot> {
    const now = this.clock();
    const observed = await modelObservations(this.knex, {}, new Date(now - days * 86_400_000), { bySupplier: true });
    // Requests refused before any supplier (the key's own policy) say nothing about a supplier.
    const served = observed.filter((o) => o.supplier);
    const shown = served.filter((o) => o.requests >= minRequests);
    return {
      generated_at: new Date(now).toISOString(),
      days,
      min_requests: minRequests,
      rows: shown.map((o) => ({
        model: o.model,
        supplier: o.supplier!,
        requests: o.requests,
        success_rate: Math.round((1 - o.error_rate) * 10_000) / 10_000,
        p50_latency_ms: o.p50_latency_ms,
        p95_latency_ms: o.p95_latency_ms,
        avg_input_tokens: Math.round(o.input_tokens / o.requests),
        avg_output_tokens: Math.round(o.output_tokens / o.requests),
      })),
      withheld: served.length - shown.length,
    };
  }
}
