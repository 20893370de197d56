import type { ApiError } from '../../../core/errors/index.js';
import { supplierFailuresKey, supplierOpenKey } from '../../../core/routing/index.js';
import type { Store } from '../../../core/store/index.js';

/** Circuit-breaker tuning (docs/routing.md). */
export interface HealthPolicy {
  /** Failures within `windowMs` that open a supplier's circuit. */
  failureThreshold: number;
  windowMs: number;
  /** How long an opened circuit stays open (a 429's Retry-After, when longer, wins). */
  cooldownMs: number;
}

/** Defaults: 3 failures within 30 s open the circuit for 30 s. */
export const defaultHealthPolicy: HealthPolicy = { failureThreshold: 3, windowMs: 30_000, cooldownMs: 30_000 };

const channel = 'health:changed';
const failuresKey = supplierFailuresKey;
const openKey = supplierOpenKey;

/**
 * Supplier health shared by every gateway replica through the store. Reads are in-process (the
 * hot path asks `isOpen` with no I/O); only failures write to the store: a failure counter with
 * expiry, and on tripping an `open until` value published to every replica. A supplier that
 * fails again soon after its circuit closed (half-open) re-opens on its first failure.
 */
export class SupplierHealth {
  private readonly openUntil = new Map<string, number>();
  private readonly lastTripped = new Map<string, number>();
  private readonly localFailures = new Map<string, number>();
  private unsubscribe: (() => Promise<void>) | undefined;

  constructor(
    private readonly store: Store,
    private readonly policy: HealthPolicy = defaultHealthPolicy,
    private readonly now: () => number = Date.now,
  ) {}

  /** Subscribes to circuit changes of other replicas; call once before serving. */
  async start(): Promise<void> {
    this.unsubscribe = await this.store.subscribe(channel, (message) => {
      const [supplier, until] = message.split('|');
      if (!supplier) return;
      const untilMs = Number(until);
      if (untilMs > this.now()) this.markOpen(supplier, untilMs, false);
      else this.openUntil.delete(supplier);
    });
  }

  async stop(): Promise<void> {
    await this.unsubscribe?.();
  }

  /** True while the supplier's circuit is open: route elsewhere first. */
  isOpen(supplier: string): boolean {
    const until = this.openUntil.get(supplier);
    if (until === undefined) return false;
    if (until > this.now()) return true;
    this.openUntil.delete(supplier);
    return false;
  }

  /** `tripped`: opened by failures (half-open rules follow), not only cooled down by a 429. */
  private markOpen(supplier: string, until: number, tripped: boolean): void {
    this.openUntil.set(supplier, Math.max(until, this.openUntil.get(supplier) ?? 0));
    if (tripped) this.lastTripped.set(supplier, this.now());
  }

  /**
   * Counts a failed attempt; opens the circuit for every replica when the threshold is reached
   * (for the cooldown). A 429 with Retry-After cools the supplier down for exactly that long,
   * even below the threshold — the supplier said when it will take requests again.
   */
  async recordFailure(supplier: string, error: ApiError): Promise<void> {
    const now = this.now();
    this.localFailures.set(supplier, (this.localFailures.get(supplier) ?? 0) + 1);
    const retryAfterMs = error.status === 429 && error.retryAfterSeconds !== undefined ? error.retryAfterSeconds * 1000 : 0;
    const recentlyTripped = now - (this.lastTripped.get(supplier) ?? -Infinity) < this.policy.cooldownMs * 2;
    const failures = await this.store.incrBy(failuresKey(supplier), 1, this.policy.windowMs);
    const tripped = failures >= this.policy.failureThreshold || recentlyTripped;
    if (!tripped && retryAfterMs === 0) return;
    const until = now + Math.max(tripped ? this.policy.cooldownMs : 0, retryAfterMs);
    this.markOpen(supplier, until, tripped);
    await this.store.set(openKey(supplier), String(until), { ttlMs: until - now });
    if (tripped) await this.store.del(failuresKey(supplier));
    await this.store.publish(channel, `${supplier}|${until}`);
  }

  /** A success clears the failure count (a store write only if this replica saw failures). */
  async recordSuccess(supplier: string): Promise<void> {
    if (!this.localFailures.get(supplier)) return;
    this.localFailures.delete(supplier);
    await this.store.del(failuresKey(supplier));
  }

  /** Loads circuits opened before this replica started (called at start-up). */
  async load(suppliers: readonly string[]): Promise<void> {
    await Promise.all(
      suppliers.map(async (supplier) => {
        const until = Number(await this.store.get(openKey(supplier)));
        if (until > this.now()) this.markOpen(supplier, until, false);
      }),
    );
  }
}
