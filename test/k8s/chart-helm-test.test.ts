// `helm test` (issue 21): the chart's test Pod runs files/helm-test.mjs, which is run here for
// real against a gateway with the simulator: /health, then a key created with the admin key, one
// chat completion with it, and the key revoked. A wrong admin key fails it, naming the step.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.js';
import { helmBinary, helmUnavailable, parseManifests, runHelm, type RenderedObject } from './support-helm.js';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const chart = join(repo, 'charts', 'svc-gateway');
const script = join(chart, 'files', 'helm-test.mjs');
const run = promisify(execFile);

async function helmTest(env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [script], { env: { PATH: process.env.PATH ?? '', ...env }, timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof failed.code === 'number' ? failed.code : -1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

describe('the helm test script against a running gateway and simulator', () => {
  let harness: GatewayHarness;
  beforeAll(async () => {
    harness = await startGatewayHarness();
  });
  afterAll(async () => {
    await harness?.close();
  });

  it('passes: /health, a key created, one chat completion, the key revoked', async () => {
    const result = await helmTest({ GATEWAY_URL: harness.gateway.url, SVC_ADMIN_KEY: harness.adminKey, SVC_TEST_MODEL: 'gpt-4o-mini' });
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /\/health: ok/);
    assert.match(result.stdout, /chat completion with gpt-4o-mini: \d+ tokens/);
    const keys = (await (
      await fetch(`${harness.gateway.url}/v1/manage/keys?name_prefix=helm-test`, {
        headers: { authorization: `Bearer ${harness.adminKey}` },
      })
    ).json()) as { data?: Array<{ name: string; status: string }> };
    assert.deepEqual(
      (keys.data ?? []).map((k) => [k.name, k.status]),
      [['helm-test', 'revoked']],
      'the key it created is revoked',
    );
  });

  it('fails, naming the step, with a wrong admin key', async () => {
    const result = await helmTest({
      GATEWAY_URL: harness.gateway.url,
      SVC_ADMIN_KEY: 'svc-admin-wrongwrongwrongwrongwrongwrongwrong12',
      SVC_TEST_MODEL: 'gpt-4o-mini',
    });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /helm test failed: create a key: POST \/v1\/manage\/keys answered 401/);
  });

  it('fails when the gateway is unreachable', async () => {
    const result = await helmTest({ GATEWAY_URL: 'http://127.0.0.1:1' });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /helm test failed/);
  });
});

const noHelm = helmUnavailable();
describe.skipIf(noHelm !== undefined)(`the chart's test hook${noHelm ? ` (skipped: ${noHelm})` : ''}`, () => {
  it('runs that script from a ConfigMap in a restricted Pod annotated helm.sh/hook: test', async () => {
    const helm = await helmBinary();
    const rendered = runHelm(helm, ['template', 'svc-gateway', chart, '--namespace', 'svc-system']);
    assert.equal(rendered.status, 0, rendered.stderr);
    const objects = parseManifests(rendered.stdout);
    const hooks = objects.filter((o) => o.metadata.annotations?.['helm.sh/hook'] === 'test');
    assert.deepEqual(hooks.map((o) => o.kind).sort(), ['ConfigMap', 'Pod']);
    const configMap = hooks.find((o) => o.kind === 'ConfigMap') as RenderedObject & { data: Record<string, string> };
    assert.equal(configMap.data['helm-test.mjs'], readFileSync(script, 'utf8').trimEnd(), 'the script as shipped');
    const pod = hooks.find((o) => o.kind === 'Pod') as RenderedObject & {
      spec: { containers: Array<{ command: string[]; env: Array<{ name: string; value?: string }> }> };
    };
    const [c] = pod.spec.containers;
    assert.deepEqual(c!.command, ['node', '/helm-test/helm-test.mjs']);
    const env = Object.fromEntries(c!.env.map((e) => [e.name, e.value]));
    assert.equal(env.GATEWAY_URL, 'http://svc-gateway-gateway');
    assert.equal(env.SVC_TEST_MODEL, 'gpt-4o-mini', 'inference through the simulator when it is on');
    const withoutSimulator = parseManifests(runHelm(helm, ['template', 'svc-gateway', chart, '--set', 'simulator.enabled=false']).stdout);
    const quietPod = withoutSimulator.find((o) => o.kind === 'Pod') as typeof pod;
    assert.ok(
      !quietPod.spec.containers[0]!.env.some((e) => e.name === 'SVC_TEST_MODEL'),
      'no paid inference without the simulator: /health only',
    );
  });
});
