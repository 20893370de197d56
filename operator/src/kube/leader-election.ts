import { ApiException, V1MicroTime, type CoordinationV1Api, type V1Lease } from '@kubernetes/client-node';
import { isStatus } from './api-status.js';
import type { Logger } from 'pino';
import { abortableRequest, runWithin } from './bounded-request.js';

/** Timings and identity of a leader election (the client-go defaults are 15 s / 10 s / 2 s). */
export interface LeaderElectionOptions {
  namespace: string;
  leaseName: string;
  /** This replica's identity (the pod name). */
  identity: string;
  /** How long a leader's last renewal keeps others away. */
  leaseDurationMs: number;
  /** A leader that could not renew for this long steps down (shorter than the lease duration). */
  renewDeadlineMs: number;
  /** How often candidates try to acquire and the leader renews. */
  retryPeriodMs: number;
  logger: Logger;
  clock?: () => number;
}

/** What the elector tells its owner. */
export interface LeadershipHandlers {
  onStartedLeading(): void;
  /** On a clean stop the Lease is released only after the returned promise settles. */
  onStoppedLeading(): void | Promise<unknown>;
}

/**
 * Lease-based leader election, as client-go's leaderelection does it: the Lease names a holder
 * and its last renewal; others take over when they have seen no renewal for a lease duration
 * (measured on their own clock from when they last saw the record change, so clocks need not
 * agree); writes carry the resourceVersion read, so of two candidates only one wins. The
 * leader steps down when it cannot renew within the renew deadline, and releases the Lease on
 * a clean stop so a successor need not wait out the lease.
 *
 * Every round is bounded: a leader's round is cut off at its renew deadline (counted from the
 * start of its last successful round, which is no later than the renewTime others saw), its
 * requests aborted and a late answer ignored. A request that hangs — a network that accepts
 * connections and forwards nothing — therefore cannot keep a replica leading past the point
 * where another may take the Lease over.
 */
export class LeaderElector {
  private leading = false;
  private timer: NodeJS.Timeout | undefined;
  private stopped = true;
  private observedRecord = '';
  private observedAt = 0;
  private lastRenewAt = 0;
  private readonly clock: () => number;
  private tick: Promise<void> = Promise.resolve();
  /** Cuts the round in flight short (stop()). */
  private roundAbort: AbortController | undefined;

  constructor(
    private readonly api: CoordinationV1Api,
    private readonly options: LeaderElectionOptions,
    private readonly handlers: LeadershipHandlers,
  ) {
    this.clock = options.clock ?? Date.now;
  }

  /** True while this replica holds the Lease. */
  get isLeader(): boolean {
    return this.leading;
  }

  /** Starts campaigning (and renewing once leading). */
  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  /**
   * Stops; a leader releases the Lease and reports that it stopped leading. A round in flight
   * is cut short rather than waited for, and the release is bounded by the renew deadline, so
   * stopping never waits on a hung request for longer than that.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.roundAbort?.abort(new Error('the elector stopped'));
    await this.tick;
    if (!this.leading) return;
    await this.setLeading(false);
    await this.releaseWithinDeadline();
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.tick = this.attempt().finally(() => this.schedule(this.options.retryPeriodMs));
    }, delayMs);
    this.timer.unref();
  }

  private async attempt(): Promise<void> {
    const startedAt = this.clock();
    const { renewDeadlineMs } = this.options;
    // A leader may spend only what is left of its renew deadline; a candidate one renew deadline.
    const budgetMs = this.leading ? this.lastRenewAt + renewDeadlineMs - startedAt : renewDeadlineMs;
    const round = new AbortController();
    this.roundAbort = round;
    let acquired = false;
    try {
      acquired = await runWithin(budgetMs, round, (signal) => this.tryAcquireOrRenew(startedAt, signal));
    } catch (error) {
      this.options.logger.warn(
        { err: error instanceof ApiException ? `HTTP ${error.code}` : String(error) },
        'leader election request failed',
      );
    } finally {
      this.roundAbort = undefined;
    }
    if (this.stopped) {
      // Acquired while stopping, or cut short not knowing: give it back (release() checks that
      // the Lease names us) rather than make the others wait it out.
      if (!this.leading && (acquired || round.signal.aborted)) await this.releaseWithinDeadline();
      return;
    }
    if (acquired) {
      this.lastRenewAt = startedAt;
      if (!this.leading) void this.setLeading(true);
    } else if (this.leading && (round.signal.aborted || this.clock() - this.lastRenewAt >= renewDeadlineMs)) {
      this.options.logger.warn({ identity: this.options.identity }, 'could not renew the leader Lease in time; stepping down');
      void this.setLeading(false);
    }
  }

  private setLeading(leading: boolean): Promise<unknown> {
    this.leading = leading;
    this.options.logger.info(
      { identity: this.options.identity, lease: this.options.leaseName },
      leading ? 'became leader' : 'stopped leading',
    );
    if (leading) {
      this.handlers.onStartedLeading();
      return Promise.resolve();
    }
    return Promise.resolve(this.handlers.onStoppedLeading());
  }

  /** One round started at `now`: true when this replica holds the Lease afterwards. */
  private async tryAcquireOrRenew(now: number, signal: AbortSignal): Promise<boolean> {
    const { namespace, leaseName: name, identity } = this.options;
    const request = abortableRequest(signal);
    let lease: V1Lease;
    try {
      lease = await this.api.readNamespacedLease({ namespace, name }, request);
    } catch (error) {
      if (!isStatus(error, 404)) throw error;
      try {
        await this.api.createNamespacedLease(
          { namespace, body: { metadata: { name, namespace }, spec: this.heldSpec(undefined, now) } },
          request,
        );
        return true;
      } catch (createError) {
        if (isStatus(createError, 409)) return false;
        throw createError;
      }
    }
    const spec = lease.spec ?? {};
    const record = JSON.stringify([spec.holderIdentity, String(spec.renewTime), spec.leaseTransitions]);
    if (record !== this.observedRecord) {
      this.observedRecord = record;
      this.observedAt = now;
    }
    const holder = spec.holderIdentity;
    if (holder && holder !== identity && now < this.observedAt + this.options.leaseDurationMs) return false;
    try {
      await this.api.replaceNamespacedLease({ namespace, name, body: { ...lease, spec: this.heldSpec(lease, now) } }, request);
      return true;
    } catch (error) {
      if (isStatus(error, 409)) return false; // another candidate wrote first
      throw error;
    }
  }

  private heldSpec(current: V1Lease | undefined, now: number): NonNullable<V1Lease['spec']> {
    const spec = current?.spec ?? {};
    const renewing = spec.holderIdentity === this.options.identity;
    return {
      holderIdentity: this.options.identity,
      leaseDurationSeconds: Math.max(1, Math.ceil(this.options.leaseDurationMs / 1000)),
      acquireTime: renewing && spec.acquireTime ? spec.acquireTime : new V1MicroTime(now),
      renewTime: new V1MicroTime(now),
      leaseTransitions: renewing ? (spec.leaseTransitions ?? 0) : current ? (spec.leaseTransitions ?? 0) + 1 : 0,
    };
  }

  /** Releases the Lease, giving up after a renew deadline (the others then wait the lease out). */
  private async releaseWithinDeadline(): Promise<void> {
    await runWithin(this.options.renewDeadlineMs, new AbortController(), (signal) => this.release(signal)).catch((error: unknown) =>
      this.options.logger.warn({ err: String(error) }, 'could not release the leader Lease'),
    );
  }

  /** Gives the Lease up: no holder, so the next candidate acquires it on its next try. */
  private async release(signal: AbortSignal): Promise<void> {
    const { namespace, leaseName: name, identity } = this.options;
    const request = abortableRequest(signal);
    const lease = await this.api.readNamespacedLease({ namespace, name }, request);
    if (lease.spec?.holderIdentity !== identity) return;
    const { holderIdentity: _released, ...spec } = lease.spec;
    await this.api.replaceNamespacedLease(
      { namespace, name, body: { ...lease, spec: { ...spec, leaseDurationSeconds: 1, renewTime: new V1MicroTime(this.clock()) } } },
      request,
    );
  }
}
