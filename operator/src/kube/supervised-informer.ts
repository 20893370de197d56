import {
  makeInformer,
  type Informer,
  type KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
  type ObjectCache,
} from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { retryDelayMs } from './work-queue.js';

/** Where and how an informer lists and watches one kind. */
export interface InformerOptions<T extends KubernetesObject> {
  /** For logs and metrics, e.g. `ManagedKey`. */
  kind: string;
  /** Collection path, e.g. `/apis/gateway.svc.dev/v1alpha1/managedkeys`. */
  path: string;
  /** Only objects with these labels (`key=value,…`), e.g. the operator's own Secrets. */
  labelSelector?: string;
  list(): Promise<KubernetesListObject<T>>;
  /**
   * The server ends each watch after this long and the informer resumes from its last
   * resourceVersion, so a connection that died silently cannot keep it deaf for longer.
   */
  watchTimeoutSeconds: number;
  baseRetryMs: number;
  maxRetryMs: number;
  logger: Logger;
  /** Called on each restart after a failure, with the backoff before it (metrics). */
  onRestart?(retryInMs: number): void;
}

/** The client's informer as the supervisor drives it. */
export type ListWatchInformer<T extends KubernetesObject> = Pick<Informer<T>, 'on' | 'start' | 'stop'> & Pick<ObjectCache<T>, 'list'>;

/** Makes the informer for a watch path and list function (tests pass a scripted one). */
export type InformerFactory<T extends KubernetesObject> = (
  path: string,
  list: () => Promise<KubernetesListObject<T>>,
) => ListWatchInformer<T>;

/** What an informer reports. */
export interface InformerHandlers<T> {
  onChange(object: T): void;
  onDelete(object: T): void;
}

/**
 * The client library's informer (list, then watch from the list's resourceVersion; on 410 Gone
 * it relists and reports what changed, deletions included) under supervision: the library
 * stops for good on a list or watch error (kubernetes-client/javascript #447, #958), so this
 * restarts it after a jittered exponential backoff — resuming from the last resourceVersion,
 * which misses no change — instead of at once in a loop (#1933). The backoff grows while
 * failures follow each other and starts over once the informer has shown it works again: a
 * successful list, an event delivered, or a watch that ended normally (its timeoutSeconds) and
 * is resumed — otherwise, after a few blips over a day, every restart would wait the maximum.
 */
export class SupervisedInformer<T extends KubernetesObject> {
  private readonly informer;
  private stopped = true;
  private failures = 0;
  private restartTimer: NodeJS.Timeout | undefined;
  /** True while a start() of ours runs: the library reports `connect` at each start too. */
  private starting = false;

  constructor(
    kubeConfig: KubeConfig,
    private readonly options: InformerOptions<T>,
    handlers: InformerHandlers<T>,
    createInformer: InformerFactory<T> = (path, list) => makeInformer<T>(kubeConfig, path, list, options.labelSelector),
  ) {
    const list = async () => {
      const result = await options.list();
      // A successful list ends a failure streak; a failing watch after it keeps counting up.
      this.failures = 0;
      return result;
    };
    this.informer = createInformer(`${options.path}?timeoutSeconds=${options.watchTimeoutSeconds}`, list);
    const working = () => {
      this.failures = 0;
    };
    this.informer.on('add', (o) => (working(), handlers.onChange(o)));
    this.informer.on('update', (o) => (working(), handlers.onChange(o)));
    this.informer.on('delete', (o) => (working(), handlers.onDelete(o)));
    this.informer.on('error', (error) => this.restartLater(error));
    // Outside our own start, `connect` means a watch ended without error and is being resumed.
    this.informer.on('connect', () => this.starting || working());
  }

  /** Starts listing and watching (errors are retried, never thrown). */
  start(): void {
    this.stopped = false;
    this.startInformer();
  }

  /** Objects the informer currently knows. */
  list(): readonly T[] {
    return this.informer.list();
  }

  /** Stops watching; no restart follows. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.restartTimer);
    // Stopping aborts the open watch, which the library reports as an error: ignored (stopped).
    await this.informer.stop();
  }

  private restartLater(error: unknown): void {
    if (this.stopped || this.restartTimer) return;
    this.failures += 1;
    const delay = retryDelayMs(this.failures, { baseRetryMs: this.options.baseRetryMs, maxRetryMs: this.options.maxRetryMs });
    this.options.logger.warn({ kind: this.options.kind, err: describe(error), retryInMs: delay }, 'informer failed; restarting');
    this.options.onRestart?.(delay);
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      if (!this.stopped) this.startInformer();
    }, delay);
    this.restartTimer.unref();
  }

  private startInformer(): void {
    this.starting = true;
    this.informer
      .start()
      .catch((error: unknown) => this.restartLater(error))
      .finally(() => {
        this.starting = false;
      });
  }
}

/** A short, secret-free description of a client error for logs. */
function describe(error: unknown): string {
  if (error && typeof error === 'object' && 'code' in error && typeof (error as { code: unknown }).code === 'number')
    return `HTTP ${(error as { code: number }).code}`;
  return error instanceof Error ? error.message.split('\n')[0]! : String(error);
}
