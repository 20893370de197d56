// Alerts tested by Prometheus itself (issue 21): Debian's prometheus package (installed by
// .ci/run) brings promtool and the server. `promtool check rules` on the alert file and on the
// chart's copy; `promtool test rules` on deploy/grafana/alerts.test.yaml, whose cases must make
// every alert fire and also keep it silent somewhere; and a real Prometheus that scrapes a running
// gateway, finds in its metrics exactly the requests that were made, and evaluates every alert
// rule against them without error.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, test } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { freePort } from '../support/free-port.js';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.js';
import { waitFor } from '../support/wait-for.js';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const alertFile = join(repo, 'deploy', 'grafana', 'alerts.yaml');
const alertTests = join(repo, 'deploy', 'grafana', 'alerts.test.yaml');
const chartRules = join(repo, 'charts', 'svc-gateway', 'files', 'prometheus-rules.yaml');
const missing = "not installed: Debian's prometheus package brings it (.ci/run installs it)";

function run(binary: string, args: string[]): { status: number | null; output: string } {
  const result = spawnSync(binary, args, { encoding: 'utf8', timeout: 60_000 });
  if (result.error) throw new Error(`${binary} ${missing} (${result.error.message})`);
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

interface RuleTest {
  alertname: string;
  exp_alerts?: unknown[];
}

describe('alert rules under promtool', () => {
  test('check rules: the alert file and the chart copy are valid, 12 alerts each', () => {
    for (const file of [alertFile, chartRules]) {
      const { status, output } = run('promtool', ['check', 'rules', file]);
      assert.equal(status, 0, output);
      assert.match(output, /SUCCESS: 12 rules found/);
    }
  });

  test('test rules: every case passes, every alert both fires and stays silent somewhere', () => {
    const { status, output } = run('promtool', ['test', 'rules', alertTests]);
    assert.equal(status, 0, output);
    const alerts = (parseYaml(readFileSync(alertFile, 'utf8')) as { groups: { rules: { alert: string }[] }[] }).groups.flatMap((g) =>
      g.rules.map((r) => r.alert),
    );
    const cases = (parseYaml(readFileSync(alertTests, 'utf8')) as { tests: { alert_rule_test: RuleTest[] }[] }).tests.flatMap(
      (t) => t.alert_rule_test,
    );
    for (const alert of alerts) {
      const mine = cases.filter((c) => c.alertname === alert);
      assert.ok(
        mine.some((c) => (c.exp_alerts ?? []).length > 0),
        `${alert} has a case where it fires`,
      );
      assert.ok(
        mine.some((c) => (c.exp_alerts ?? []).length === 0),
        `${alert} has a case where it stays silent`,
      );
    }
  });
});

/** A Prometheus server on loopback scraping one target every second, with the alert rules loaded. */
async function startPrometheus(target: string, dir: string): Promise<{ url: string; process: ChildProcess; stop(): Promise<void> }> {
  const config = join(dir, 'prometheus.yml');
  writeFileSync(
    config,
    JSON.stringify({
      global: { scrape_interval: '1s', evaluation_interval: '1s' },
      rule_files: [alertFile],
      scrape_configs: [{ job_name: 'gateway', static_configs: [{ targets: [target] }] }],
    }),
  );
  const port = await freePort();
  const child = spawn(
    'prometheus',
    [`--config.file=${config}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let log = '';
  child.stderr!.on('data', (chunk: Buffer) => (log += chunk.toString('utf8')));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const spawnError = new Promise<never>((_, reject) =>
    child.once('error', (error) => reject(new Error(`prometheus ${missing} (${error.message})`))),
  );
  const url = `http://127.0.0.1:${port}`;
  await Promise.race([
    spawnError,
    waitFor(`Prometheus ready on ${url}`, async () => {
      if (child.exitCode !== null) throw new Error(`prometheus exited (${child.exitCode}): ${log}`);
      return (await fetch(`${url}/-/ready`).catch(() => undefined))?.ok === true;
    }),
  ]);
  return {
    url,
    process: child,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

describe('a real Prometheus scraping a running gateway', () => {
  let h: GatewayHarness;
  let prometheus: Awaited<ReturnType<typeof startPrometheus>> | undefined;
  const dir = mkdtempSync(join(tmpdir(), 'svc-prometheus-'));

  beforeAll(async () => {
    h = await startGatewayHarness(undefined, { metrics: true });
    prometheus = await startPrometheus(new URL(h.gateway.metricsUrl!).host, dir);
  });
  afterAll(async () => {
    await prometheus?.stop();
    await h?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const query = async (promql: string): Promise<Array<{ metric: Record<string, string>; value: [number, string] }>> => {
    const response = await fetch(`${prometheus!.url}/api/v1/query?query=${encodeURIComponent(promql)}`);
    const body = (await response.json()) as {
      status: string;
      data: { result: Array<{ metric: Record<string, string>; value: [number, string] }> };
    };
    assert.equal(body.status, 'success', JSON.stringify(body));
    return body.data.result;
  };

  test('a query over the scraped metrics returns the requests made, and every alert rule evaluates', async () => {
    const client = new OpenAI({ apiKey: await h.createKey(), baseURL: `${h.gateway.url}/v1`, maxRetries: 0 });
    const made = 7;
    for (let i = 0; i < made; i += 1) {
      await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: `request ${i}` }] });
    }
    const refused = await new OpenAI({ apiKey: 'svc_not-a-key', baseURL: `${h.gateway.url}/v1`, maxRetries: 0 }).chat.completions
      .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'refused' }] })
      .catch((error: { status?: number }) => error.status);
    assert.equal(refused, 401);

    const succeeded = 'sum(svc_gateway_requests_total{job="gateway",status="200"})';
    await waitFor(
      `Prometheus to have scraped ${made} successful requests`,
      async () => Number((await query(succeeded))[0]?.value[1]) === made,
    );
    assert.equal(Number((await query('sum(svc_gateway_requests_total{job="gateway",status="401"})'))[0]?.value[1]), 1, 'the refusal');
    assert.equal((await query('up{job="gateway"}'))[0]?.value[1], '1', 'the target is up');

    // Every alert rule has been evaluated against these series without an error.
    const rulesHealth = async () => {
      const body = (await (await fetch(`${prometheus!.url}/api/v1/rules?type=alert`)).json()) as {
        data: { groups: { rules: { name: string; health: string; lastError?: string }[] }[] };
      };
      return body.data.groups.flatMap((g) => g.rules);
    };
    await waitFor('every alert rule evaluated', async () => (await rulesHealth()).every((r) => r.health !== 'unknown'));
    const rules = await rulesHealth();
    assert.equal(rules.length, 12);
    for (const rule of rules) assert.equal(rule.health, 'ok', `${rule.name}: ${rule.lastError ?? ''}`);
  });
});
