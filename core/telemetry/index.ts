// Telemetry shared by the deployables: Prometheus metric sets (prom-client), the /metrics
// server, OpenTelemetry tracing configured by OTEL_*, and the redacting pino logger.
export * from './registry.js';
export * from './platform-metrics.js';
export * from './gateway-metrics.js';
export * from './operator-metrics.js';
export * from './portal-metrics.js';
export * from './metrics-server.js';
export * from './tracing.js';
export * from './logger.js';
