// Every metric a Grafana panel or an alert rule names must be one the code registers: a
// renamed metric otherwise leaves an empty panel and an alert that can never fire.
import { test } from 'vitest';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import type { Registry } from 'prom-client';
import { createGatewayMetrics, createMetricsRegistry, createOperatorMetrics, createPortalMetrics } from '../../core/telemetry/index.js';
import { dashboardExpressions, metricsInExpression, ruleExpressions } from './promql.js';

const grafanaDir = fileURLToPath(new URL('../../deploy/grafana/', import.meta.url));

/** Series names a registry exposes: counters and gauges as named, histograms with their suffixes. */
async function exposedNames(registry: Registry): Promise<Set<string>> {
  const names = new Set<string>();
  for (const metric of await registry.getMetricsAsJSON()) {
    const type = String(metric.type);
    names.add(metric.name);
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(metric.name + suffix);
    if (type === 'summary') for (const suffix of ['_sum', '_count']) names.add(metric.name + suffix);
  }
  return names;
}

/** All names the three deployables register, each on a registry of its own as in production. */
async function registeredNames(): Promise<Set<string>> {
  const registries = [createMetricsRegistry(), createMetricsRegistry(), createMetricsRegistry()];
  createGatewayMetrics(registries[0]!);
  createOperatorMetrics(registries[1]!);
  createPortalMetrics(registries[2]!);
  const all = new Set<string>();
  for (const registry of registries) for (const name of await exposedNames(registry)) all.add(name);
  return all;
}

test('promql: the extractor reads selectors, __name__ matchers and reports syntax errors', () => {
  assert.deepEqual(
    metricsInExpression('sum by (le) (rate(svc_a_bucket{x="1"}[$__rate_interval])) / ignoring(le) {__name__="svc_b"} or absent(svc_c)')
      .metrics,
    ['svc_a_bucket', 'svc_b', 'svc_c'],
    'every selector is found',
  );
  assert.ok(metricsInExpression('sum(rate(svc_a[5m]) by').errors.length > 0, 'a broken expression is reported');
});

test('promql: every dashboard and alert expression parses and names only registered metrics', async () => {
  const registered = await registeredNames();
  const expressions = [...dashboardExpressions(`${grafanaDir}dashboards`), ...ruleExpressions(`${grafanaDir}alerts.yaml`)];
  assert.ok(expressions.length >= 60, `dashboards and rules were read (${expressions.length} expressions)`);
  const problems: string[] = [];
  const used = new Set<string>();
  for (const { where, expr } of expressions) {
    const { metrics, errors } = metricsInExpression(expr);
    for (const error of errors) problems.push(`${where}: ${error}\n    ${expr}`);
    if (metrics.length === 0) problems.push(`${where}: names no metric\n    ${expr}`);
    for (const metric of metrics) {
      used.add(metric);
      if (!registered.has(metric)) problems.push(`${where}: ${metric} is not registered by core/telemetry\n    ${expr}`);
    }
  }
  assert.deepEqual(problems, [], problems.join('\n'));
  // The alerts the issue asks for exist (by the metric each one watches).
  const ruleMetrics = new Set(ruleExpressions(`${grafanaDir}alerts.yaml`).flatMap((r) => metricsInExpression(r.expr).metrics));
  for (const metric of [
    'svc_gateway_requests_total',
    'svc_gateway_failovers_total',
    'svc_gateway_supplier_circuit_open',
    'svc_gateway_rejections_total',
    'svc_gateway_audit_lag_seconds',
    'svc_operator_reconciles_total',
    'svc_operator_leader',
  ]) {
    assert.ok(ruleMetrics.has(metric), `an alert rule watches ${metric}`);
  }
  assert.ok(used.size >= 20, `dashboards cover the metric set (${used.size} metrics used)`);
});

test('promql: an expression naming an unregistered metric is caught', async () => {
  const registered = await registeredNames();
  const { metrics } = metricsInExpression('sum(rate(svc_gateway_request_total[5m]))');
  assert.deepEqual(
    metrics.filter((m) => !registered.has(m)),
    ['svc_gateway_request_total'],
    'a misspelt metric is flagged',
  );
});
