// SVC_WORKERS: several gateway processes on one host behind one port (node:cluster), for
// single-host installs that would otherwise leave cores idle. In Kubernetes keep one process per
// pod and scale replicas. The primary only supervises: it forks the workers, restarts one that
// dies, serves the aggregated /metrics and /health, and on SIGTERM lets each worker drain.
import cluster, { type Worker } from 'node:cluster';
import { availableParallelism } from 'node:os';
import { AggregatorRegistry, Registry } from 'prom-client';
import { ConfigError, sharedServices, type Settings } from '../../core/config/index.js';
import { startMetricsServer } from '../../core/telemetry/index.js';

/** How many gateway processes to run: SVC_WORKERS, with `auto` one per core where they can share state. */
export function workerCount(settings: Pick<Settings, 'SVC_WORKERS' | 'REDIS_URL' | 'DATABASE_URL'>): number {
  const shared = sharedServices(settings);
  if (settings.SVC_WORKERS === 'auto') return shared ? availableParallelism() : 1;
  if (settings.SVC_WORKERS > 1 && !shared)
    throw new ConfigError(
      `SVC_WORKERS=${settings.SVC_WORKERS} needs REDIS_URL and DATABASE_URL: worker processes cannot share the embedded database and in-process store`,
    );
  return settings.SVC_WORKERS;
}

// The workers accept connections themselves from the shared listening socket. In node:cluster's
// default round-robin mode on Linux the primary accepts every connection and passes it to a
// worker over IPC; a connection passed to a worker that has just died is never answered nor
// passed on, and its client waits forever (seen in test/gateway/process.test.ts: a request after
// a worker was killed, held by the primary for 30 s; reproduced with a bare cluster). When the
// kernel hands out connections, one a dead worker had not accepted goes to another worker.
// node:cluster fixes the policy at the first fork or setupPrimary call, so it is chosen when this
// module loads; Node's own NODE_CLUSTER_SCHED_POLICY, when it is `rr` or `none`, still decides.
const chosenByNode = ['rr', 'none'].includes(process.env.NODE_CLUSTER_SCHED_POLICY ?? '');
if (!chosenByNode) cluster.schedulingPolicy = cluster.SCHED_NONE;

const metricsRequest = 'svc:metrics-request';
const metricsReply = 'svc:metrics-reply';
const workerReady = 'svc:worker-ready';
/** How long a scrape waits for one worker; a worker that does not answer is left out of it. */
const workerScrapeTimeoutMs = 2_000;

interface MetricsRequest {
  type: typeof metricsRequest;
  id: number;
}
interface MetricsReply {
  type: typeof metricsReply;
  id: number;
  metrics: Awaited<ReturnType<Registry['getMetricsAsJSON']>>;
}

/** In a worker: answers the primary's scrapes with this process's metrics, and says it is ready. */
export function reportMetricsToPrimary(registry: Registry): void {
  process.on('message', (message: MetricsRequest) => {
    if (message?.type !== metricsRequest) return;
    void registry
      .getMetricsAsJSON()
      .then((metrics) => process.send?.({ type: metricsReply, id: message.id, metrics } satisfies MetricsReply));
  });
  process.send?.({ type: workerReady });
}

/**
 * The primary's /metrics: the workers' metrics summed (or, for gauges marked so, their maximum)
 * by prom-client's aggregation. Only workers that finished starting are asked, and one that does
 * not answer in time is left out of that scrape, so a worker being replaced never fails a scrape.
 */
function clusterMetricsSource(): { metrics(): Promise<string>; contentType: string; close(): void } {
  const ready = new Set<Worker>();
  let nextId = 0;
  const onMessage = (worker: Worker, message: { type?: string }) => {
    if (message?.type === workerReady) ready.add(worker);
  };
  // A worker leaves the scrape as soon as its channel closes: sending to it then would raise an
  // 'error' on the worker object later, outside any try.
  const onGone = (worker: Worker) => ready.delete(worker);
  cluster.on('message', onMessage);
  cluster.on('disconnect', onGone);
  cluster.on('exit', onGone);
  const ask = (worker: Worker): Promise<MetricsReply['metrics'] | undefined> =>
    new Promise((resolve) => {
      const id = nextId++;
      const onMessage = (message: MetricsReply) => {
        if (message?.type !== metricsReply || message.id !== id) return;
        done(message.metrics);
      };
      const timer = setTimeout(() => done(undefined), workerScrapeTimeoutMs);
      const done = (metrics: MetricsReply['metrics'] | undefined) => {
        clearTimeout(timer);
        worker.off('message', onMessage);
        resolve(metrics);
      };
      worker.on('message', onMessage);
      if (!worker.isConnected()) return done(undefined);
      // With a callback, a send that fails reports here instead of as an unhandled 'error' event.
      worker.send({ type: metricsRequest, id } satisfies MetricsRequest, undefined, (error: Error | null) => {
        if (error) done(undefined);
      });
    });
  const contentType = Registry.PROMETHEUS_CONTENT_TYPE;
  return {
    contentType,
    close: () => {
      cluster.off('message', onMessage);
      cluster.off('disconnect', onGone);
      cluster.off('exit', onGone);
    },
    metrics: async () => {
      const answers = await Promise.all([...ready].map(ask));
      return AggregatorRegistry.aggregate(answers.filter((a): a is MetricsReply['metrics'] => a !== undefined)).metrics();
    },
  };
}

/** A running primary: where the workers listen, and how to stop them. */
export interface ClusterPrimary {
  url: string;
  metricsUrl: string | undefined;
  workers: number;
  /** Signals every worker to drain and resolves once all exited: true when each exited cleanly. */
  stop(): Promise<boolean>;
}

/**
 * Runs the primary: forks `count` workers (each runs the entry point again — or what
 * cluster.setupPrimary named — and serves the shared port), restarts a worker that exits
 * unexpectedly, and serves the workers' metrics. Resolves once every worker listens.
 */
export async function runClusterPrimary(settings: Settings, count: number): Promise<ClusterPrimary> {
  // Workers never open the metrics port themselves: the primary serves their sum.
  const workerEnv = { SVC_METRICS_PORT: '0' };
  let stopping: Promise<boolean> | undefined;
  const metricsSource = clusterMetricsSource();
  const forkedAt = new Map<Worker, number>();
  const fork = () => forkedAt.set(cluster.fork(workerEnv), Date.now());
  // A worker that keeps dying soon after its start (Redis unreachable, say) is replaced after a
  // delay that doubles with each such death, up to 30 s, instead of in a tight loop.
  let quickDeaths = 0;
  let refork: NodeJS.Timeout | undefined;
  const onExit = (worker: Worker, code: number | null, signal: string | null) => {
    const lived = Date.now() - (forkedAt.get(worker) ?? 0);
    forkedAt.delete(worker);
    if (stopping) return;
    quickDeaths = lived < 10_000 ? quickDeaths + 1 : 0;
    const delayMs = quickDeaths === 0 ? 0 : Math.min(1_000 * 2 ** (quickDeaths - 1), 30_000);
    console.error(`gateway worker ${worker.process.pid} exited (${code ?? signal}); starting another in ${delayMs} ms`);
    refork = setTimeout(() => {
      if (!stopping) fork();
    }, delayMs);
  };
  const listening = new Promise<{ address: string; port: number }>((resolve, reject) => {
    let ready = 0;
    const onListening = (_worker: Worker, where: { address: string; port: number }) => {
      ready += 1;
      if (ready < count) return;
      cluster.off('listening', onListening);
      cluster.off('exit', onEarlyExit);
      cluster.on('exit', onExit);
      resolve(where);
    };
    const onEarlyExit = (worker: Worker, code: number | null, signal: string | null) => {
      cluster.off('listening', onListening);
      cluster.off('exit', onEarlyExit);
      for (const other of liveWorkers()) other.process.kill('SIGKILL');
      reject(new Error(`gateway worker ${worker.process.pid} exited during start-up (${code ?? signal})`));
    };
    cluster.on('listening', onListening);
    cluster.on('exit', onEarlyExit);
  });
  for (let i = 0; i < count; i += 1) fork();
  const { address, port } = await listening;
  const metrics =
    settings.SVC_METRICS_PORT !== 0
      ? await startMetricsServer(metricsSource, { host: settings.SVC_HOST, port: settings.SVC_METRICS_PORT, health: () => !stopping })
      : undefined;
  const stop = () => {
    stopping ??= (async () => {
      cluster.off('exit', onExit);
      clearTimeout(refork);
      const exits = liveWorkers().map(
        (worker) =>
          new Promise<boolean>((resolve) => {
            // A worker still starting has no handler yet and ends by the signal itself: nothing was in flight.
            worker.once('exit', (code, signal) => resolve(code === 0 || signal === 'SIGTERM'));
            worker.process.kill('SIGTERM');
          }),
      );
      const clean = (await Promise.all(exits)).every(Boolean);
      await metrics?.close();
      metricsSource.close();
      return clean;
    })();
    return stopping;
  };
  const host = address === '0.0.0.0' || address === '::' ? '127.0.0.1' : address;
  return { url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`, metricsUrl: metrics?.url, workers: count, stop };
}

function liveWorkers(): Worker[] {
  return Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined && !w.isDead());
}

/** True in a process forked by the primary. */
export const isClusterWorker = (): boolean => cluster.isWorker;
