import { ApiException, V1MicroTime, type CoordinationV1Api, type V1Lease } from '@kubernetes/client-node';
import type { Logger } from 'pino';

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

const isStatus = (error: unknown, code: number) => error instanceof ApiException && error.code === code;

/**
 * Lease-based leader election, as client-go's leaderelection does it: the Lease names a holder
 * and its last renewal; others take over when they have seen no renewal for a lease duration
 * (measured on their own clock from when they last saw the record change, so clocks need not
 * agree); writes carry the resourceVersion read, so of two candidates only one wins. The
 * leader steps down when it cannot renew within the renew deadline, and releases the Lease on
 * a clean stop so a successor need not wait out the lease.
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

  /** Stops; a leader releases the Lease and reports that it stopped leading. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.tick;
    if (!this.leading) return;
    await this.setLeading(false);
    await this.release().catch((error: unknown) => this.options.logger.warn({ err: String(error) }, 'could not release the leader Lease'));
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.tick = this.attempt().finally(() => this.schedule(this.options.retryPeriodMs));
    }, delayMs);
    this.timer.unref();
  }

  private async attempt(): Promise<void> {
    let acquired = false;
    try {
      acquired = await this.tryAcquireOrRenew();
    } catch (error) {
      this.options.logger.warn({ err: error instanceof ApiException ? `HTTP ${error.code}` : String(error) }, 'leader election request failed');
    }
    if (this.stopped) {
      // Acquired while stopping: give it back rather than make the others wait it out.
      if (acquired) await this.release().catch(() => undefined);
      return;
    }
    const now = this.clock();
    if (acquired) {
      this.lastRenewAt = now;
      if (!this.leading) void this.setLeading(true);
    } else if (this.leading && now - this.lastRenewAt >= this.options.renewDeadlineMs) {
      this.options.logger.warn({ identity: this.options.identity }, 'could not renew the leader Lease in time; stepping down');
      void this.setLeading(false);
    }
  }

  private setLeading(leading: boolean): Promise<unknown> {
    this.leading = leading;
    this.options.logger.info({ identity: this.options.identity, lease: this.options.leaseName }, leading ? 'became leader' : 'stopped leading');
    if (leading) {
      this.handlers.onStartedLeading();
      return Promise.resolve();
    }
    return Promise.resolve(this.handlers.onStoppedLeading());
  }

  /** One round: true when this replica holds the Lease afterwards. */
  private async tryAcquireOrRenew(): Promise<boolean> {
    const { namespace, leaseName: name, identity } = this.options;
    const now = this.clock();
    let lease: V1Lease;
    try {
      lease = await this.api.readNamespacedLease({ namespace, name });
    } catch (error) {
      if (!isStatus(error, 404)) throw error;
      try {
        await this.api.createNamespacedLease({ namespace, body: { metadata: { name, namespace }, spec: this.heldSpec(undefined, now) } });
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
      await this.api.replaceNamespacedLease({ namespace, name, body: { ...lease, spec: this.heldSpec(lease, now) } });
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

  /** Gives the Lease up: no holder, so the next candidate acquires it on its next try. */
  private async release(): Promise<void> {
    const { namespace, leaseName: name, identity } = this.options;
    const lease = await this.api.readNamespacedLease({ namespace, name });
    if (lease.spec?.holderIdentity !== identity) return;
    const { holderIdentity: _released, ...spec } = lease.spec;
    await this.api.replaceNamespacedLease({ namespace, name, body: { ...lease, spec: { ...spec, leaseDurationSeconds: 1, renewTime: new V1MicroTime(this.clock()) } } });
  }
}
