import type { Knex } from 'knex';
import type { AuditJournal } from '../../../core/audit/index.js';
import {
  addLeasesIfPresent,
  budgetWindow,
  bucketOf,
  leaseField,
  loadBudgetArgs,
  loadBudgetIfAbsent,
  newLeaseGeneration,
  newLeaseHolder,
  parseLeaseField,
  publishSpendGroupCap,
  spendFromAuditLog,
  spendGroupCapNano,
  spendGroupMonthSpend,
  toNano,
  windowStart,
  type BudgetWindow,
  type SpendGroup,
} from '../../../core/budget/index.js';
import type { KeyRecord } from '../../../core/keys/index.js';
import type { Store } from '../../../core/store/index.js';
import type { WalletLedger } from '../../../core/wallets/index.js';
import { KeyFlights } from './key-flights.js';

/** A reservation's place on one counter (or wallet mirror): the store key and its lease field (core/budget/leases.ts). */
export interface HeldLease {
  key: string;
  field: string;
}

/** A settlement the store refused, kept to be retried. */
interface OwedSettlement {
  attempt: () => Promise<void>;
  /** The reservation it settles: its leases and amount. */
  held: { leases: readonly HeldLease[]; nano: number };
  /** Counters rebuilt since it was owed, which count its request's cost already: it leaves them alone. */
  skipped: Set<string>;
}

/** Where the recovery reports a settlement it could not make yet. */
export type RecoveryLogger = (facts: object, message: string) => void;

/**
 * What this gateway knows about spend that the store may have lost: the reservations it holds
 * in flight, the settlements the store refused (retried until it takes them), and — through the
 * audit journal — records not yet in PostgreSQL. When a budget counter or a wallet mirror is
 * missing from the store (it restarted empty, or never had it), it is rebuilt from PostgreSQL
 * plus these, so a lost counter never reads as "nothing spent" (issue 13 finding 4).
 *
 * A counter rebuilt by another replica does not know this replica's in-flight reservations:
 * they are not in its leases, so their settlements charge their actual cost (core/budget/leases.ts);
 * until then the counter counts them as nothing (docs/reliability.md).
 */
export class SpendRecovery {
  /** This gateway's name on the leases of its reservations (core/budget/leases.ts). */
  readonly leaseHolder = newLeaseHolder();
  /** This gateway's admitted requests per key, for the counters a change of the key's budget settings brings (key-flights.ts). */
  readonly flights = new KeyFlights();
  /** Store key (budget counter or wallet mirror) → lease field → nano-USD reserved in flight by this process. */
  private readonly held = new Map<string, Map<string, number>>();
  private owedSettlements: OwedSettlement[] = [];
  /** Per key id, the carry of its requests in flight under way (carryFlights). */
  private readonly carrying = new Map<string, Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private retrying: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly knex: Knex,
    private readonly journal: AuditJournal,
    private readonly wallets: WalletLedger,
    private readonly options: { retryMs?: number; logger?: RecoveryLogger } = {},
  ) {}

  /** Counts a reservation as in flight on these counters, under its leases; the returned function ends it. */
  hold(leases: readonly HeldLease[], nano: number): () => void {
    for (const { key, field } of leases) {
      const fields = this.held.get(key) ?? new Map<string, number>();
      fields.set(field, (fields.get(field) ?? 0) + nano);
      this.held.set(key, fields);
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      for (const { key, field } of leases) {
        const fields = this.held.get(key);
        if (!fields) continue;
        const left = (fields.get(field) ?? 0) - nano;
        if (left > 0) fields.set(field, left);
        else fields.delete(field);
        if (fields.size === 0) this.held.delete(key);
      }
    };
  }

  /**
   * What a rebuild of `storeKey` counts as this process's reservations in flight, per lease field
   * (a copy), and in all. A reservation whose settlement is owed is not among them: its request's
   * cost is in the audit log (or the journal) the rebuild reads, so — once the rebuild's load has
   * taken (`rebuilt`) — its settlement is told to leave the rebuilt counter alone; otherwise the
   * cost would be counted twice (review). A load that did not take (another gateway's came first,
   * not knowing this one's records) leaves the settlement to apply as usual (outside probe).
   */
  private heldForRebuild(storeKey: string): { leases: Map<string, number>; total: number; rebuilt: () => void } {
    const leases = new Map(this.held.get(storeKey) ?? []);
    const owedHere = this.owedSettlements.filter((owed) => owed.held.leases.some((lease) => lease.key === storeKey));
    for (const owed of owedHere)
      for (const lease of owed.held.leases) {
        if (lease.key !== storeKey) continue;
        const left = (leases.get(lease.field) ?? 0) - owed.held.nano;
        if (left > 0) leases.set(lease.field, left);
        else leases.delete(lease.field);
      }
    let total = 0;
    for (const nano of leases.values()) total += nano;
    return { leases, total, rebuilt: () => owedHere.forEach((owed) => owed.skipped.add(storeKey)) };
  }

  /**
   * What a rebuild of `storeKey` adds to PostgreSQL's sums: the reservations in flight
   * (heldForRebuild) and the journal's records not yet known to be in PostgreSQL, read together
   * before PostgreSQL is, and the journal read again after it (`unconfirmed()`: both reads, each
   * request once). A request settling while the rebuild runs is then counted by its reservation
   * or by its record or both, never by neither: its record appended after the first read is in
   * the second unless confirmed into PostgreSQL in between, and a record confirmed between the
   * first read and PostgreSQL's is counted twice, towards refusing. (Read after PostgreSQL
   * alone, a record confirmed meanwhile was missed — outside probe; read before it alone, a
   * request settled meanwhile was missed — CI: a counter below the audited spend.)
   */
  private beforeRebuild(storeKey: string) {
    const first = [...this.journal.unconfirmed()];
    const held = this.heldForRebuild(storeKey);
    const unconfirmed = () => {
      const seen = new Set(first.map((record) => record.requestId));
      return [...first, ...[...this.journal.unconfirmed()].filter((record) => !seen.has(record.requestId))];
    };
    return { held, unconfirmed };
  }

  /**
   * Runs a settlement; when the store refuses it, keeps it (and its reservation in flight, so
   * a rebuilt counter still counts it) and retries every `retryMs` until the store takes it.
   * `settlement` is told the counters it must leave alone (rebuilt while it was owed); `held`
   * is the reservation it settles, as held.
   */
  async settle(
    settlement: (skipped: ReadonlySet<string>) => Promise<void>,
    release: () => void,
    held: OwedSettlement['held'] = { leases: [], nano: 0 },
  ): Promise<void> {
    const skipped = new Set<string>();
    const attempt = async () => {
      await settlement(skipped);
      release();
    };
    try {
      await attempt();
    } catch (error) {
      this.owedSettlements.push({ attempt, held, skipped });
      this.scheduleRetry();
      throw error;
    }
    this.storeAnswered();
  }

  /**
   * The store answered again: what it refused earlier is settled now. Until then each owed
   * reservation stays counted in place of its cost, so waiting for the retry timer would show
   * (and enforce) a budget and a wallet off by the unspent part of every owed reservation.
   */
  storeAnswered(): void {
    if (this.owedSettlements.length > 0) void this.retryOwed();
  }

  /** Settlements still owed to the store (tests, logs). */
  get owedCount(): number {
    return this.owedSettlements.length;
  }

  /**
   * Rebuilds a key's missing budget counter: the audit log, records not yet written, reservations
   * in flight — on this counter, and the key's requests in flight that reserved on an older
   * counter of the key (or on none) before its budget settings changed (key-flights.ts).
   */
  async rebuildBudget(store: Store, key: KeyRecord, window: BudgetWindow, now: Date): Promise<void> {
    const { unconfirmed, held } = this.beforeRebuild(window.counterKey);
    const carried = this.carriedInto(key, window);
    let loaded: boolean;
    try {
      loaded = await this.loadRebuilt(store, key, window, now, unconfirmed, held.leases, carried.flights);
    } catch (error) {
      carried.dropped(); // to be carried by a later rebuild or addition
      throw error;
    }
    if (loaded) {
      held.rebuilt();
      carried.took();
    } else {
      // Another gateway's load came first, without this one's requests in flight: added to it.
      carried.dropped();
      await this.addFlights(store, key, window);
    }
  }

  /** Reads a key's spend for rebuildBudget and loads the counter unless one appeared meanwhile; whether it loaded. */
  private async loadRebuilt(
    store: Store,
    key: KeyRecord,
    window: BudgetWindow,
    now: Date,
    unconfirmed: () => readonly { timestamp: string; keyId: string; costUsd: number }[],
    heldLeases: ReadonlyMap<string, number>,
    carried: readonly { bucket: number; field: string; flight: { nano: number } }[],
  ): Promise<boolean> {
    const period = key.budgetPeriod ?? 'monthly';
    const spend = await spendFromAuditLog(this.knex, key.id, period, now);
    const from = windowStart(period, now).getTime();
    // May count a record PostgreSQL already has but the journal has not heard of yet: that errs
    // towards refusing, never towards overspending.
    for (const record of unconfirmed()) {
      const at = new Date(record.timestamp);
      if (record.keyId !== key.id || at.getTime() < from) continue;
      const bucket = bucketOf(period, at);
      spend.set(bucket, (spend.get(bucket) ?? 0) + toNano(record.costUsd));
    }
    // Each reservation in flight counts in the bucket it was reserved in, under its lease.
    const leases = new Map(heldLeases);
    for (const [field, nano] of heldLeases) {
      const bucket = parseLeaseField(field)?.bucket ?? window.bucket;
      spend.set(bucket, (spend.get(bucket) ?? 0) + nano);
    }
    for (const { bucket, field, flight } of carried) {
      spend.set(bucket, (spend.get(bucket) ?? 0) + flight.nano);
      leases.set(field, (leases.get(field) ?? 0) + flight.nano);
    }
    return store.runScript(loadBudgetIfAbsent, [window.counterKey], loadBudgetArgs(window, spend, leases));
  }

  /**
   * The key's requests in flight a rebuild (or an addition) carries into `window`, each under a
   * lease field of its own on that counter (a generation of their own: no reservation made on the
   * counter shares their names); marked as being carried meanwhile, so no other carry here takes
   * them too. `took` makes them held there once the store took them; `dropped` leaves them to a
   * later carry. One whose settlement began meanwhile is left to its lease's end: its record, read
   * by a rebuild too, may count it twice until then (towards refusing, never towards overspending).
   */
  private carriedInto(key: KeyRecord, window: BudgetWindow) {
    const generation = newLeaseGeneration();
    const flights = this.flights.toCarry(key, window).map(({ flight, bucket }) => ({
      flight,
      bucket,
      field: leaseField(flight.leaseEnd(), bucket, this.leaseHolder, generation),
    }));
    for (const { flight } of flights) flight.carrying = window.counterKey;
    const took = () => {
      // Carried under these settings: they are the newest seen, or settlements would not look there.
      if (flights.length > 0) this.flights.see(key);
      for (const { flight, field } of flights) {
        flight.carrying = null;
        if (flight.settling) continue;
        flight.carried?.release();
        flight.carried = { key: window.counterKey, field, release: this.hold([{ key: window.counterKey, field }], flight.nano) };
      }
    };
    const dropped = () => flights.forEach(({ flight }) => (flight.carrying = null));
    return { flights, took, dropped };
  }

  /**
   * Adds this gateway's requests of `key` in flight elsewhere to its counter `window`, which
   * another gateway rebuilt without them: until they are in it, it would admit up to the whole
   * limit again (outside probe: two replicas, twice the budget). Never retried (twice would count
   * them twice): a failure leaves them to be charged their actual cost there when they settle.
   */
  private async addFlights(store: Store, key: KeyRecord, window: BudgetWindow): Promise<void> {
    const carried = this.carriedInto(key, window);
    if (carried.flights.length === 0) return;
    const args = carried.flights.flatMap(({ field, bucket, flight }) => [field, bucket, flight.nano]);
    const added = await store.runScript(addLeasesIfPresent, [window.counterKey], args).catch(() => false);
    if (added) carried.took();
    else carried.dropped();
  }

  /**
   * Carries this gateway's requests of `key` in flight on an older counter of the key (or on
   * none) into the counter of its settings now: rebuilding it when missing (which carries them),
   * adding them to it otherwise. For a change of the key heard, or newer settings a request
   * brought; a store that fails leaves them to be charged their actual cost when they settle.
   */
  carryFlights(store: Store, key: KeyRecord, now: Date): Promise<void> {
    // One carry of a key at a time, each waiting for those before it: a caller that finds nothing
    // left to carry (an announcement's carry took them) still returns only once they are in.
    const run = (this.carrying.get(key.id) ?? Promise.resolve()).then(() => this.carryNow(store, key, now));
    this.carrying.set(key.id, run);
    run
      .finally(() => {
        if (this.carrying.get(key.id) === run) this.carrying.delete(key.id);
      })
      .catch(() => undefined); // carryNow reports its own failures
    return run;
  }

  private async carryNow(store: Store, key: KeyRecord, now: Date): Promise<void> {
    if (key.budgetLimitUsd === null) return;
    const window = budgetWindow(key.id, key.budgetPeriod ?? 'monthly', now, key.budgetPeriodSince);
    if (this.flights.toCarry(key, window).length === 0) return;
    try {
      if ((await store.pttl(window.counterKey)) === -2) await this.rebuildBudget(store, key, window, now);
      else await this.addFlights(store, key, window);
    } catch (error) {
      this.options.logger?.(
        { key_id: key.id, err: error instanceof Error ? error.message : String(error) },
        'requests in flight not carried into a new budget counter',
      );
    }
  }

  /**
   * A change of the key with this secret hash was announced (the key-change channel): when it has
   * requests in flight here, its settings are read again (`read`: PostgreSQL) and, when its
   * budget counter changed, those requests are carried into the new one — another gateway may be
   * admitting against it already. Off the request path.
   */
  async keyChanged(store: Store, secretHash: string, read: () => Promise<KeyRecord | undefined>, now: () => number): Promise<void> {
    if (!this.flights.holdsSecret(secretHash)) return;
    const key = await read().catch(() => undefined);
    if (key && this.flights.see(key)) await this.carryFlights(store, key, new Date(now()));
  }

  /**
   * Rebuilds a spend group's missing monthly counter (as rebuildBudget, over all the group's
   * keys) and re-reads its cap from PostgreSQL (the cap expires from the store every minute).
   */
  async rebuildSpendGroup(store: Store, group: SpendGroup, window: BudgetWindow, now: Date): Promise<void> {
    // The cap expires every minute (so a change made while the store was away still arrives);
    // the counter does not. Only a missing counter needs the month's spend summed again.
    const counterMissing = (await store.pttl(window.counterKey)) === -2;
    const { unconfirmed, held } = this.beforeRebuild(window.counterKey);
    const [spend, capNano] = await Promise.all([
      counterMissing ? spendGroupMonthSpend(this.knex, group, now) : undefined,
      spendGroupCapNano(this.knex, group),
    ]);
    if (spend) {
      const from = windowStart('monthly', now).getTime();
      let spent = spend.spentNano;
      for (const record of unconfirmed())
        if (spend.keyIds.has(record.keyId) && new Date(record.timestamp).getTime() >= from) spent += toNano(record.costUsd);
      const args = loadBudgetArgs(window, new Map([[0, spent + held.total]]), held.leases);
      if (await store.runScript(loadBudgetIfAbsent, [window.counterKey], args)) held.rebuilt();
    }
    await publishSpendGroupCap(store, group, capNano);
  }

  /**
   * Loads a payer's missing wallet mirror: the ledger, less debits not yet written and this
   * process's reservations in flight, which the mirror's leases then hold.
   */
  async rebuildWallet(payerId: string, walletStoreKey: string): Promise<void> {
    const { unconfirmed, held } = this.beforeRebuild(walletStoreKey);
    // Summed once the ledger is read (the journal's second read: beforeRebuild).
    const pending = () => {
      let nano = held.total;
      for (const record of unconfirmed()) if (record.payerId === payerId && record.costUsd > 0) nano += toNano(record.costUsd);
      return nano;
    };
    if (await this.wallets.loadMirror(payerId, pending, held.leases)) held.rebuilt();
  }

  /**
   * Stops retrying after one last attempt (bounded by `finalAttemptMs`): an owed settlement
   * dropped here would leave its whole reservation counted in the budget and taken from the
   * wallet mirror, in place of its cost, until the period ends or the store loses them.
   */
  async stop(finalAttemptMs = 2_000): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.owedSettlements.length === 0) return;
    let bound: NodeJS.Timeout | undefined;
    await Promise.race([this.retryOwed(), new Promise((resolve) => (bound = setTimeout(resolve, finalAttemptMs)))]);
    clearTimeout(bound);
    if (this.owedSettlements.length > 0)
      this.options.logger?.(
        { owed: this.owedSettlements.length },
        'stopped with settlements the store refused; their reservations stay counted',
      );
  }

  private scheduleRetry(): void {
    if (this.timer || this.stopped) return;
    this.timer = setTimeout(() => void this.retryOwed(), this.options.retryMs ?? 1_000);
    this.timer.unref();
  }

  /** One retry round at a time (the timer, the store answering and stop() may all ask). */
  private retryOwed(): Promise<void> {
    this.retrying ??= this.retryRound().finally(() => (this.retrying = undefined));
    return this.retrying;
  }

  /** Every owed settlement at once (each counts once: its marker); those refused again stay owed. */
  private async retryRound(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    // Owed until taken: a rebuild while the round is under way must still see (and skip) them
    // (outside probe: one emptied from the list during the round was counted twice).
    const round = [...this.owedSettlements];
    const results = await Promise.allSettled(round.map((owed) => owed.attempt()));
    const taken = new Set(round.filter((_, i) => results[i]!.status === 'fulfilled'));
    this.owedSettlements = this.owedSettlements.filter((owed) => !taken.has(owed));
    const refused = round.filter((_, i) => results[i]!.status === 'rejected');
    if (refused.length === 0) return;
    const error = (results.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason as unknown;
    this.options.logger?.(
      { owed: this.owedSettlements.length, err: error instanceof Error ? error.message : String(error) },
      'settlements still owed to the store; retrying',
    );
    this.scheduleRetry();
  }
}
