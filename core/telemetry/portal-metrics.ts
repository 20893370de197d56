import { Counter, Histogram, type Registry } from 'prom-client';
import { createPlatformMetrics, type PlatformMetrics } from './platform-metrics.js';

/** How a portal user signed in. */
export type LoginMethod = 'password' | 'oidc';

/** The portal's metric set. `route` is the Express route pattern (`/keys/:id`), never the raw path. */
export interface PortalMetrics extends PlatformMetrics {
  requests: Counter<'route' | 'method' | 'status'>;
  requestDuration: Histogram<'route' | 'method'>;
  /** Sign-in attempts by method and result (success, failure). */
  logins: Counter<'method' | 'result'>;
  /**
   * Payment webhook events by provider, event type and result (processed, duplicate, ignored,
   * rejected). Event types outside the handled set are reported as `other` by the caller.
   */
  webhookEvents: Counter<'provider' | 'type' | 'result'>;
}

/** Registers the portal's metrics on `registry`. */
export function createPortalMetrics(registry: Registry): PortalMetrics {
  const registers = [registry];
  return {
    ...createPlatformMetrics(registry),
    requests: new Counter({
      name: 'svc_portal_requests_total',
      help: 'Portal HTTP requests, by route pattern, method and status',
      labelNames: ['route', 'method', 'status'],
      registers,
    }),
    requestDuration: new Histogram({
      name: 'svc_portal_request_duration_seconds',
      help: 'Portal HTTP request duration, by route pattern and method',
      labelNames: ['route', 'method'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    }),
    logins: new Counter({
      name: 'svc_portal_logins_total',
      help: 'Sign-in attempts, by method (password, oidc) and result (success, failure)',
      labelNames: ['method', 'result'],
      registers,
    }),
    webhookEvents: new Counter({
      name: 'svc_portal_webhook_events_total',
      help: 'Payment webhook events, by provider, event type and result',
      labelNames: ['provider', 'type', 'result'],
      registers,
    }),
  };
}
