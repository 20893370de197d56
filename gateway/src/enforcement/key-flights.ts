// A key's requests in flight, for the budget counter its settings change to (docs/keys.md,
// "Budget period").
//
// A key's budget counter is named by its period and by when its budget settings last changed
// (`budgetPeriodSince`, core/budget/periods.ts): a new period, or a limit set on a key that had
// none, starts a new counter, rebuilt from the audit log by the first request that needs it.
// Requests admitted before the change reserved on the old counter (or on none) and their records
// reach the audit log only when they finish — after that rebuild. Counted nowhere, they let the
// key overspend (an outside probe: four period changes under concurrent slow requests spent 2.46×
// a daily budget; with two replicas, twice it). So each gateway keeps its admitted requests per
// key until they settle:
// - when it hears of the change (the key-change announcement, its own PATCH, or a request bringing
//   the new settings) it carries its requests of the key into the new counter with their worst
//   case, under leases of their own — rebuilding the counter, or adding them to the one another
//   gateway rebuilt (SpendRecovery.carryFlights) — so the new counter counts them at once;
// - each of them settles on the key's newest counter too — its successor — ending its carried
//   lease with its actual cost or, where it could not be carried, charging its actual cost there
//   (a settlement that finds no lease: core/budget/leases.ts).
import { budgetWindow, type BudgetWindow } from '../../../core/budget/index.js';
import type { KeyRecord } from '../../../core/keys/index.js';

/** One admitted request of a key, until it settles. */
export interface KeyFlight {
  readonly requestId: string;
  readonly keyId: string;
  /** The budget counter it reserved on; null when its key had no budget then. */
  readonly counterKey: string | null;
  /** When it was admitted (ms since the epoch): its spend counts in that moment's period. */
  readonly at: number;
  /** When its key's budget settings had last changed as it was admitted (settingsSince): unchanged since, no successor. */
  readonly since: number;
  /** Its worst case in nano-USD: what a carried lease holds for it. */
  readonly nano: number;
  /** The minute its lease ends (core/budget/leases.ts), asked only when it is carried. */
  readonly leaseEnd: () => number;
  /** The newer counter this gateway carried it into, its lease field there, and the end of that hold. */
  carried: { key: string; field: string; release: () => void } | null;
  /** A counter a rebuild or an addition here is carrying it into right now (none other may, meanwhile). */
  carrying: string | null;
  /**
   * Its settlement has begun: from then its audit record is in the journal a rebuild reads, so a
   * rebuild no longer carries it (that would count it twice).
   */
  settling: boolean;
}

interface KeyEntry {
  flights: Set<KeyFlight>;
  /** The newest settings of the key seen by a request while these were in flight. */
  settings: KeyRecord;
  /** The secret hashes the key had meanwhile (a rotation gives it a new one): each indexed in `bySecret`. */
  secrets: Set<string>;
}

/** When a key's budget settings last changed, as a number (a key that never changed them is oldest). */
function settingsSince(key: KeyRecord): number {
  return key.budgetPeriodSince ? Date.parse(key.budgetPeriodSince) : Number.NEGATIVE_INFINITY;
}

/** The counter a key's budget settings count the spend of a moment on. */
function windowAt(settings: KeyRecord, at: number): BudgetWindow {
  return budgetWindow(settings.id, settings.budgetPeriod ?? 'monthly', new Date(at), settings.budgetPeriodSince);
}

/** This gateway's admitted requests per key (only keys with some in flight), and the newest settings seen for each. */
export class KeyFlights {
  private readonly byKey = new Map<string, KeyEntry>();
  /** Secret hash → key id, for the keys in `byKey`: changes are announced by secret hash. */
  private readonly bySecret = new Map<string, string>();

  /**
   * A request of `key` asks to be admitted (or a change of it was heard): its settings become the
   * newest seen for the key's flights, when they are. True when they changed the key's budget
   * counter while some were in flight (they are then to be carried into it).
   */
  see(key: KeyRecord): boolean {
    const entry = this.byKey.get(key.id);
    if (!entry || settingsSince(key) < settingsSince(entry.settings)) return false;
    const changed = settingsSince(key) > settingsSince(entry.settings);
    entry.settings = key;
    this.indexSecret(entry, key);
    return changed;
  }

  private indexSecret(entry: KeyEntry, key: KeyRecord): void {
    if (entry.secrets.has(key.secretHash)) return;
    entry.secrets.add(key.secretHash);
    this.bySecret.set(key.secretHash, key.id);
  }

  /** Whether the key with this secret hash has requests in flight here (changes are announced by secret hash). */
  holdsSecret(secretHash: string): boolean {
    return this.bySecret.has(secretHash);
  }

  /** Counts an admitted request in flight until `end`. */
  admit(flight: Omit<KeyFlight, 'since' | 'carried' | 'carrying' | 'settling'>, key: KeyRecord): KeyFlight {
    let entry = this.byKey.get(key.id);
    if (!entry) {
      entry = { flights: new Set(), settings: key, secrets: new Set() };
      this.byKey.set(key.id, entry);
      this.indexSecret(entry, key);
    } else if (settingsSince(key) >= settingsSince(entry.settings)) {
      entry.settings = key;
      this.indexSecret(entry, key);
    }
    const admitted: KeyFlight = { ...flight, since: settingsSince(key), carried: null, carrying: null, settling: false };
    entry.flights.add(admitted);
    return admitted;
  }

  /** The request settled everywhere: no longer in flight, nor held on a counter it was carried into. */
  end(flight: KeyFlight): void {
    const entry = this.byKey.get(flight.keyId);
    if (entry?.flights.delete(flight) && entry.flights.size === 0) {
      this.byKey.delete(flight.keyId);
      for (const secret of entry.secrets) this.bySecret.delete(secret);
    }
    flight.carried?.release();
    flight.carried = null;
  }

  /**
   * The counter the key's newest settings seen here count the flight's spend on, when that is not
   * the one it reserved on (null: no budget now, or the same counter).
   */
  successor(flight: KeyFlight): BudgetWindow | null {
    const settings = this.byKey.get(flight.keyId)?.settings;
    // Settings not changed since it was admitted (every request's case): the counter is the same,
    // and no window is worked out on the settlement path.
    if (!settings || settings.budgetLimitUsd === null || settingsSince(settings) === flight.since) return null;
    const window = windowAt(settings, flight.at);
    return window.counterKey === flight.counterKey ? null : window;
  }

  /**
   * The flights a rebuild of `window` (the counter of `key`'s settings) carries in, each with the
   * bucket it counts in there: those of the key that reserved elsewhere (or nowhere), whose moment
   * that counter covers, not carried (nor being carried) into it, and not yet settling.
   */
  toCarry(key: KeyRecord, window: BudgetWindow): { flight: KeyFlight; bucket: number }[] {
    const entry = this.byKey.get(key.id);
    if (!entry) return [];
    const carried: { flight: KeyFlight; bucket: number }[] = [];
    for (const flight of entry.flights) {
      if (flight.settling || flight.counterKey === window.counterKey) continue;
      if (flight.carried?.key === window.counterKey || flight.carrying === window.counterKey) continue;
      const own = windowAt(key, flight.at);
      if (own.counterKey === window.counterKey) carried.push({ flight, bucket: own.bucket });
    }
    return carried;
  }

  /** Keys with requests in flight (tests). */
  get keysInFlight(): number {
    return this.byKey.size;
  }

  /** Secret hashes indexed for those keys (tests: none left once nothing is in flight). */
  get secretsIndexed(): number {
    return this.bySecret.size;
  }
}
