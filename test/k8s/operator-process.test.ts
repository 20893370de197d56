// The operator as a process (npm run operator): configured by environment, killed mid-reconcile
// with SIGKILL and restarted, stopped with SIGTERM. Embedded PostgreSQL in a data directory
// that outlives the processes, so the restart finds what the killed one wrote. The directory
// starts migrated (a copy of the test snapshot): initdb is the slow part of a first start and
// is not what this test is about.
import { onTestFinished, test } from 'vitest';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoordinationV1Api, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { openDatabase } from '../../core/db/index.js';
import { seedEmbeddedDataDir } from '../../core/db/testing.js';
import { generateSecret, hashSecret, KeyRepository } from '../../core/keys/index.js';
import type { ManagedKeyObject } from '../../operator/src/managed-key/resource.js';
import { kubeForTests } from '../support/fake-kube/index.js';
import { conditionOf, crdGroup, crdVersion, isKubeStatus, testOperatorSettings } from '../support/operator-testbed.js';
import { freePort } from '../support/free-port.js';
import { waitFor } from '../support/wait-for.js';

interface OperatorProcess {
  child: ChildProcess;
  metricsUrl: Promise<string>;
  exited: Promise<number | null>;
}

function startOperatorProcess(env: Record<string, string>): OperatorProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', 'operator/src/main.ts'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const metricsUrl = new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /metrics and \/health: (\S+)/.exec(output);
      if (match) resolve(match[1]!);
    });
    child.once('exit', () => reject(new Error(`operator exited before starting: ${output}`)));
  });
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, metricsUrl, exited };
}

test(
  'the operator process: killed mid-reconcile, a restart converges without a second Secret; SIGTERM releases the Lease',
  { timeout: 180_000 },
  async () => {
    const kube = await kubeForTests();
    const dir = mkdtempSync(join(tmpdir(), 'svc-operator-'));
    const processes: OperatorProcess[] = [];
    onTestFinished(async () => {
      for (const p of processes) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
      await Promise.all(processes.map((p) => p.exited));
      await kube.close();
      rmSync(dir, { recursive: true, force: true });
    });
    const { DATABASE_URL: _db, REDIS_URL: _redis, ...inherited } = process.env;
    const env: Record<string, string> = {
      ...(inherited as Record<string, string>),
      ...testOperatorSettings,
      SVC_HOST: '127.0.0.1',
      SVC_KEY_PEPPER: generateSecret('admin'),
      SVC_DATA_DIR: join(dir, 'data'),
      POD_NAMESPACE: kube.namespace,
    };
    await seedEmbeddedDataDir(env.SVC_DATA_DIR!);
    if (kube.fake) {
      env.KUBECONFIG = join(dir, 'kubeconfig.json');
      writeFileSync(env.KUBECONFIG, kube.kubeConfig.exportConfig());
    }
    const customObjects = kube.kubeConfig.makeApiClient(CustomObjectsApi);
    const core = kube.kubeConfig.makeApiClient(CoreV1Api);
    const leases = kube.kubeConfig.makeApiClient(CoordinationV1Api);
    const holder = async () =>
      (await leases.readNamespacedLease({ namespace: kube.namespace, name: env.SVC_LEASE_NAME! }).catch(() => undefined))?.spec
        ?.holderIdentity;
    const secretExists = async (name: string) =>
      core.readNamespacedSecret({ namespace: kube.namespace, name }).then(
        () => true,
        (e: unknown) => (isKubeStatus(e, 404) ? false : Promise.reject(e)),
      );
    const readKey = async (name: string) =>
      (await customObjects.getNamespacedCustomObject({
        group: crdGroup,
        version: crdVersion,
        namespace: kube.namespace,
        plural: 'managedkeys',
        name,
      })) as ManagedKeyObject;

    const first = startOperatorProcess({ ...env, POD_NAME: 'op-first', SVC_METRICS_PORT: String(await freePort()) });
    processes.push(first);
    assert.equal((await fetch((await first.metricsUrl).replace('/metrics', '/health'))).status, 200, 'the process answers /health');
    await waitFor('the process to lead', async () => (await holder()) === 'op-first', 60_000);

    await customObjects.createNamespacedCustomObject({
      group: crdGroup,
      version: crdVersion,
      namespace: kube.namespace,
      plural: 'managedkeys',
      body: { apiVersion: `${crdGroup}/${crdVersion}`, kind: 'ManagedKey', metadata: { name: 'killed' }, spec: { requestsPerMinute: 5 } },
    });
    // Killed as soon as the Secret exists: the row and the status may or may not be written.
    await waitFor('the Secret', () => secretExists('killed-key'), 30_000);
    first.child.kill('SIGKILL');
    await first.exited;

    const second = startOperatorProcess({ ...env, POD_NAME: 'op-second', SVC_METRICS_PORT: String(await freePort()) });
    processes.push(second);
    await second.metricsUrl; // it started (a crash would say why here)
    // The killed leader did not release the Lease: the successor waits for it to expire.
    await waitFor('the successor to lead', async () => (await holder()) === 'op-second', 60_000);
    await waitFor('the ManagedKey to converge', async () => conditionOf(await readKey('killed'), 'Ready')?.status === 'True', 30_000);
    const secrets = await core.listNamespacedSecret({ namespace: kube.namespace, labelSelector: 'gateway.svc.dev/managed-key=killed' });
    assert.equal(secrets.items.length, 1, 'exactly one Secret');
    const apiKey = Buffer.from(secrets.items[0]?.data?.apiKey ?? '', 'base64').toString('utf8');
    const keyId = (await readKey('killed')).status?.keyId;

    second.child.kill('SIGTERM');
    assert.equal(await second.exited, 0, 'SIGTERM stops the process cleanly');
    assert.equal(await holder(), undefined, 'and releases the Lease');

    const database = await openDatabase({ kind: 'embedded', dataDir: env.SVC_DATA_DIR! });
    try {
      const rows = await database.knex('api_keys').where('managed_by', 'like', `ManagedKey/${kube.namespace}/killed/%`).select('id');
      assert.deepEqual(
        rows.map((r: { id: string }) => r.id),
        [keyId],
        'exactly one key row, the one status names',
      );
      const key = await new KeyRepository(database.knex, env.SVC_KEY_PEPPER!).findById(keyId ?? '');
      assert.equal(key?.secretHash, hashSecret(apiKey, env.SVC_KEY_PEPPER!), 'the row holds the hash of the key in the Secret');
    } finally {
      await database.close();
    }
  },
);
