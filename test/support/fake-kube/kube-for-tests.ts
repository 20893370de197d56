import { randomBytes } from 'node:crypto';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { FakeKubeServer } from './server.js';

/** A Kubernetes API for one test: the fake server, or a real cluster when KUBECONFIG is set. */
export interface TestKube {
  kubeConfig: KubeConfig;
  /** A fresh namespace for the test's namespaced objects (deleted by close()). */
  namespace: string;
  /** The fake server with its fault injection; undefined on a real cluster. */
  fake: FakeKubeServer | undefined;
  close(): Promise<void>;
}

/** True when the suite runs against a real cluster (tests needing fault injection skip then). */
export function onRealCluster(env: Record<string, string | undefined> = process.env): boolean {
  return Boolean(env.KUBECONFIG);
}

/** Why a fault-injection test is skipped on a real cluster, for node:test's `skip` option. */
export function skipUnlessFake(env: Record<string, string | undefined> = process.env): string | false {
  return onRealCluster(env) ? 'needs the fake API server (fault injection)' : false;
}

/**
 * The API a test talks to: with KUBECONFIG set, the cluster it names (whose CRDs must be
 * installed: `kubectl apply -f crds/`); otherwise a fake API server on loopback. Either way
 * the test gets a fresh namespace, so the same suite runs unchanged on both.
 */
export async function kubeForTests(env: Record<string, string | undefined> = process.env): Promise<TestKube> {
  const namespace = `svc-test-${randomBytes(4).toString('hex')}`;
  let fake: FakeKubeServer | undefined;
  let kubeConfig: KubeConfig;
  if (onRealCluster(env)) {
    kubeConfig = new KubeConfig();
    kubeConfig.loadFromDefault();
  } else {
    fake = await FakeKubeServer.start();
    kubeConfig = fake.kubeConfig(namespace);
  }
  const core = kubeConfig.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  return {
    kubeConfig,
    namespace,
    fake,
    close: async () => {
      if (fake) {
        await fake.close();
        return;
      }
      await core.deleteNamespace({ name: namespace }).catch(() => undefined);
    },
  };
}
