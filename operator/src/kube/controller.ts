import type { KubeConfig, KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { OperatorMetrics } from '../../../core/telemetry/index.js';
import { SupervisedInformer } from './supervised-informer.js';
import { WorkQueue, type WorkOutcome } from './work-queue.js';

/** Tuning shared by the controllers. */
export interface ControllerTuning {
  /** Every object is reconciled again this often, changed or not (level-triggered safety net). */
  resyncMs: number;
  watchTimeoutSeconds: number;
  concurrency: number;
  baseRetryMs: number;
  maxRetryMs: number;
}

/** One controller: a kind, how to list it, and how to reconcile one object by key. */
export interface ControllerSpec<T extends KubernetesObject> {
  kind: string;
  /** Collection path across all namespaces. */
  path: string;
  list(): Promise<KubernetesListObject<T>>;
  reconcile(key: string): Promise<WorkOutcome>;
  /**
   * Objects the controller owns (a ManagedKey's Secret): each change or deletion of one queues
   * its owner, so a deleted or edited Secret is put right at once instead of at the next resync.
   */
  owned?: {
    kind: string;
    /** One collection per path (all namespaces, or one per watched namespace). */
    collections: { path: string; list(): Promise<KubernetesListObject<KubernetesObject>> }[];
    labelSelector: string;
    /** The owner's key, or undefined for an object no owner of this kind claims. */
    ownerKey(object: KubernetesObject): string | undefined;
  };
}

/** `<namespace>/<name>` for namespaced objects, `<name>` for cluster-scoped ones. */
export function objectKey(object: KubernetesObject): string {
  const { namespace, name = '' } = object.metadata ?? {};
  return namespace ? `${namespace}/${name}` : name;
}

/**
 * Informer → work queue → reconcile, for one kind: every change (and every resync) queues the
 * object's key; the queue guarantees one reconcile per key at a time and backs failures off.
 * Reconciles are counted and timed by result.
 */
export class Controller<T extends KubernetesObject> {
  private readonly informer: SupervisedInformer<T>;
  private readonly ownedInformers: SupervisedInformer<KubernetesObject>[];
  private readonly queue: WorkQueue;
  private resyncTimer: NodeJS.Timeout | undefined;

  constructor(
    kubeConfig: KubeConfig,
    private readonly spec: ControllerSpec<T>,
    private readonly tuning: ControllerTuning,
    private readonly metrics: OperatorMetrics,
    private readonly logger: Logger,
  ) {
    this.queue = new WorkQueue(
      (key) => this.reconcileOnce(key),
      tuning,
      (depth) => metrics.queueDepth.set({ kind: spec.kind }, depth),
    );
    this.informer = new SupervisedInformer<T>(
      kubeConfig,
      {
        kind: spec.kind,
        path: spec.path,
        list: spec.list,
        watchTimeoutSeconds: tuning.watchTimeoutSeconds,
        baseRetryMs: tuning.baseRetryMs,
        maxRetryMs: tuning.maxRetryMs,
        logger,
        onRestart: () => metrics.informerRestarts.inc({ kind: spec.kind }),
      },
      { onChange: (o) => this.queue.add(objectKey(o)), onDelete: (o) => this.queue.add(objectKey(o)) },
    );
    const owned = spec.owned;
    const queueOwner = (o: KubernetesObject) => {
      const key = owned?.ownerKey(o);
      if (key) this.queue.add(key);
    };
    this.ownedInformers = (owned?.collections ?? []).map(
      (collection) =>
        new SupervisedInformer<KubernetesObject>(
          kubeConfig,
          {
            kind: owned!.kind,
            path: collection.path,
            labelSelector: owned!.labelSelector,
            list: collection.list,
            watchTimeoutSeconds: tuning.watchTimeoutSeconds,
            baseRetryMs: tuning.baseRetryMs,
            maxRetryMs: tuning.maxRetryMs,
            logger,
            onRestart: () => metrics.informerRestarts.inc({ kind: owned!.kind }),
          },
          { onChange: queueOwner, onDelete: queueOwner },
        ),
    );
  }

  /** Starts watching and reconciling. */
  start(): void {
    this.informer.start();
    for (const informer of this.ownedInformers) informer.start();
    this.resyncTimer = setInterval(() => {
      for (const object of this.informer.list()) this.queue.add(objectKey(object));
    }, this.tuning.resyncMs);
    this.resyncTimer.unref();
  }

  /** Stops watching and waits for reconciles in progress. */
  /** How long the longest reconcile in progress has been running (the health check's input). */
  longestRunningMs(now?: number): number {
    return this.queue.longestRunningMs(now);
  }

  async stop(): Promise<void> {
    clearInterval(this.resyncTimer);
    await this.informer.stop();
    await Promise.all(this.ownedInformers.map((informer) => informer.stop()));
    await this.queue.stop();
  }

  private async reconcileOnce(key: string): Promise<WorkOutcome> {
    const { kind } = this.spec;
    const end = this.metrics.reconcileDuration.startTimer({ kind });
    try {
      const outcome = await this.spec.reconcile(key);
      this.metrics.reconciles.inc({ kind, result: outcome.requeueAfterMs === undefined ? 'success' : 'requeue' });
      return outcome;
    } catch (error) {
      this.metrics.reconciles.inc({ kind, result: 'error' });
      this.logger.warn({ kind, object: key, err: describeError(error) }, 'reconcile failed; retrying with backoff');
      throw error;
    } finally {
      end();
    }
  }
}

/** A secret-free one-line description of a reconcile error (API errors by status and reason). */
export function describeError(error: unknown): string {
  if (error && typeof error === 'object' && 'code' in error && 'body' in error) {
    const body = (error as { body: unknown }).body;
    let reason = '';
    try {
      const parsed = (typeof body === 'string' ? JSON.parse(body) : body) as { message?: string } | undefined;
      reason = parsed?.message ? `: ${parsed.message}` : '';
    } catch {
      // not a Status body
    }
    return `HTTP ${String((error as { code: unknown }).code)}${reason}`;
  }
  return error instanceof Error ? error.message.split('\n')[0]! : String(error);
}
