import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { createPlatformMetrics, type PlatformMetrics } from './platform-metrics.js';

/** How one reconcile ended: done, retried later on purpose, or failed (retried with backoff). */
export type ReconcileResult = 'success' | 'requeue' | 'error';

/** The operator's metric set; `kind` is the custom resource kind (ManagedKey, RegionPolicy). */
export interface OperatorMetrics extends PlatformMetrics {
  reconciles: Counter<'kind' | 'result'>;
  reconcileDuration: Histogram<'kind'>;
  /** Objects waiting in the work queue, by kind. */
  queueDepth: Gauge<'kind'>;
  /** 1 while this replica holds the leader Lease, else 0. */
  leader: Gauge;
  /** Informer (list/watch) restarts after a failure, by kind. */
  informerRestarts: Counter<'kind'>;
  /** What happened to each bundled CRD at start (applied, kept, refused, failed). */
  crdApplies: Counter<'crd' | 'outcome'>;
}

/** Registers the operator's metrics on `registry`. */
export function createOperatorMetrics(registry: Registry): OperatorMetrics {
  const registers = [registry];
  const leader = new Gauge({
    name: 'svc_operator_leader',
    help: '1 while this replica holds the leader Lease and reconciles, else 0',
    registers,
  });
  // Present from the first scrape, so "no leader" alerts see 0s rather than no series at all.
  leader.set(0);
  return {
    ...createPlatformMetrics(registry),
    reconciles: new Counter({
      name: 'svc_operator_reconciles_total',
      help: 'Reconciles, by resource kind and result (success, requeue, error)',
      labelNames: ['kind', 'result'],
      registers,
    }),
    reconcileDuration: new Histogram({
      name: 'svc_operator_reconcile_duration_seconds',
      help: 'Duration of one reconcile, by resource kind',
      labelNames: ['kind'],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    }),
    queueDepth: new Gauge({
      name: 'svc_operator_queue_depth',
      help: 'Objects waiting to be reconciled, by resource kind',
      labelNames: ['kind'],
      registers,
    }),
    leader,
    informerRestarts: new Counter({
      name: 'svc_operator_informer_restarts_total',
      help: 'Informer restarts after a list or watch failure, by resource kind',
      labelNames: ['kind'],
      registers,
    }),
    crdApplies: new Counter({
      name: 'svc_operator_crd_applies_total',
      help: 'Bundled CustomResourceDefinitions at start, by CRD and outcome (apply, keep, refuse, failed)',
      labelNames: ['crd', 'outcome'],
      registers,
    }),
  };
}
