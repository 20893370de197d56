import { collectDefaultMetrics, Registry } from 'prom-client';

/** Every metric the platform defines starts with this, so dashboards can tell ours from libraries'. */
export const metricPrefix = 'svc_';

/** The deployables that expose metrics; each has its own registry and metric set. */
export type Deployable = 'gateway' | 'operator' | 'portal';

/**
 * A fresh registry for one deployable. One registry per running instance (never prom-client's
 * global one), so a test can run several gateways in one process without their numbers mixing.
 * Node's process metrics (`process_*`, `nodejs_*`) keep their standard names.
 */
export function createMetricsRegistry(options: { processMetrics?: boolean } = {}): Registry {
  const registry = new Registry();
  if (options.processMetrics ?? true) collectDefaultMetrics({ register: registry });
  return registry;
}
