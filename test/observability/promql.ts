// Reading the PromQL of deploy/grafana: which metrics an expression names, with a real PromQL
// parser (Prometheus' own lezer grammar), and where the dashboards and rules keep expressions.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parser } from '@prometheus-io/lezer-promql';
import type { SyntaxNode } from '@lezer/common';
import { parse as parseYaml } from 'yaml';

/** What one expression names, and what the parser could not read. */
export interface PromqlNames {
  metrics: string[];
  errors: string[];
}

/** Grafana's interval variables, which PromQL cannot parse, replaced by a plain duration. */
function withoutGrafanaIntervals(expr: string): string {
  return expr.replace(/\$(__rate_interval|__interval|__range)\b|\$\{(__rate_interval|__interval|__range)\}/g, '5m');
}

function unquote(literal: string): string {
  return literal.length >= 2 ? literal.slice(1, -1) : literal;
}

/** The metric a vector selector names: `name{…}` or `{__name__="name", …}`. */
function selectorMetric(node: SyntaxNode, text: string): string | undefined {
  const identifier = node.getChild('Identifier');
  if (identifier) return text.slice(identifier.from, identifier.to);
  for (const matcher of node.getChild('LabelMatchers')?.getChildren('UnquotedLabelMatcher') ?? []) {
    const label = matcher.getChild('LabelName');
    const value = matcher.getChild('StringLiteral');
    const op = matcher.getChild('MatchOp')?.firstChild;
    if (label && value && op?.name === 'EqlSingle' && text.slice(label.from, label.to) === '__name__')
      return unquote(text.slice(value.from, value.to));
  }
  return undefined;
}

/** Parses `expr` and lists the metric names of its selectors (and any syntax errors). */
export function metricsInExpression(expr: string): PromqlNames {
  const text = withoutGrafanaIntervals(expr);
  const metrics: string[] = [];
  const errors: string[] = [];
  parser.parse(text).iterate({
    enter(ref) {
      if (ref.type.isError) errors.push(`syntax error at ${ref.from}: …${text.slice(Math.max(0, ref.from - 20), ref.from + 20)}…`);
      if (ref.name === 'VectorSelector') {
        const name = selectorMetric(ref.node, text);
        if (name) metrics.push(name);
        else errors.push(`selector without a metric name at ${ref.from}`);
      }
    },
  });
  return { metrics, errors };
}

/** One PromQL expression found in deploy/grafana, with where it came from. */
export interface FoundExpression {
  where: string;
  expr: string;
}

function panelExpressions(panels: unknown[], file: string, out: FoundExpression[]): void {
  for (const panel of panels as { title?: string; targets?: { expr?: string }[]; panels?: unknown[] }[]) {
    for (const target of panel.targets ?? []) if (target.expr) out.push({ where: `${file}: panel "${panel.title}"`, expr: target.expr });
    if (panel.panels) panelExpressions(panel.panels, file, out);
  }
}

/** Every expression of the dashboards (targets, and the selectors of `label_values` variables). */
export function dashboardExpressions(dir: string): FoundExpression[] {
  const out: FoundExpression[] = [];
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.json'))) {
    const dashboard = JSON.parse(readFileSync(join(dir, file), 'utf8')) as {
      panels?: unknown[];
      templating?: { list?: { name: string; definition?: string }[] };
    };
    panelExpressions(dashboard.panels ?? [], file, out);
    for (const variable of dashboard.templating?.list ?? []) {
      // label_values(<selector>, <label>) is Grafana's, not PromQL; its selector is.
      const match = /^label_values\((.+),\s*[a-zA-Z_][a-zA-Z0-9_]*\)$/.exec(variable.definition ?? '');
      if (match) out.push({ where: `${file}: variable $${variable.name}`, expr: match[1]! });
    }
  }
  return out;
}

/** Every `expr` of a Prometheus rule file (alerting and recording rules). */
export function ruleExpressions(file: string): FoundExpression[] {
  const document = parseYaml(readFileSync(file, 'utf8')) as {
    groups: { name: string; rules: { alert?: string; record?: string; expr: string }[] }[];
  };
  return document.groups.flatMap((group) =>
    group.rules.map((rule) => ({ where: `${file}: ${group.name}/${rule.alert ?? rule.record}`, expr: String(rule.expr) })),
  );
}
