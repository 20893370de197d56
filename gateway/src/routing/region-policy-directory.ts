import type { Logger } from 'pino';
import { RegionPolicies, regionPolicyChannel, type RegionPolicyRepository } from '../../../core/regions/index.js';
import type { Store } from '../../../core/store/index.js';

/**
 * The region policies this gateway routes by, held in memory so candidate selection does no
 * I/O. Loaded from PostgreSQL at start, reloaded when the operator announces a change (within
 * a store round trip of the reconcile), and every `refreshMs` in case an announcement was
 * missed while the store connection was down (pub/sub does not replay).
 */
export class RegionPolicyDirectory {
  private policies: RegionPolicies = RegionPolicies.none;
  private unsubscribe: (() => Promise<void>) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private loading: Promise<void> | undefined;
  private reloadAgain = false;

  constructor(
    private readonly store: Store,
    private readonly repository: RegionPolicyRepository,
    private readonly options: { refreshMs: number; logger: Logger },
  ) {}

  /** Loads the policies and follows changes; call once before serving. */
  async start(): Promise<void> {
    this.unsubscribe = await this.store.subscribe(regionPolicyChannel, () => void this.reload());
    // Not through reload(): a gateway that cannot read its policies must not start routing
    // without them (that would send requests where a policy forbids).
    this.policies = RegionPolicies.from(await this.repository.list());
    this.timer = setInterval(() => void this.reload(), this.options.refreshMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.unsubscribe?.();
    await this.loading;
  }

  /** The policies in force now. */
  current(): RegionPolicies {
    return this.policies;
  }

  /**
   * Reads every policy again. A change announced while a read is running triggers one more
   * read after it, so the last announcement is always followed by a read that sees it.
   */
  private reload(): Promise<void> {
    if (this.loading) {
      this.reloadAgain = true;
      return this.loading;
    }
    this.loading = (async () => {
      do {
        this.reloadAgain = false;
        try {
          this.policies = RegionPolicies.from(await this.repository.list());
        } catch (error) {
          // Keep routing by the last policies read; the next announcement or refresh retries.
          this.options.logger.error({ err: (error as Error).message }, 'could not load region policies');
        }
      } while (this.reloadAgain);
    })().finally(() => {
      this.loading = undefined;
    });
    return this.loading;
  }
}
