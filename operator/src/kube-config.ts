// Where the operator finds its cluster: KUBECONFIG, the in-cluster service account, or
// ~/.kube/config — as kubectl does. @kubernetes/client-node's loadFromDefault falls back, when
// none is there, to http://localhost:8080 with no credentials: on a developer's machine that is
// often the gateway's own port, and the operator then logged a TLS complaint every two seconds
// forever while /health answered ok (outside probe). With nothing to load it refuses to start.
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { ConfigError } from '../../core/config/index.js';

/** The places a cluster can come from, as this environment has them (tests give their own). */
export interface KubeEnvironment {
  env: NodeJS.ProcessEnv;
  /** Whether a file exists (the home kubeconfig). */
  exists: (path: string) => boolean;
  home: string;
}

const processEnvironment: KubeEnvironment = { env: process.env, exists: existsSync, home: homedir() };

/** The kubeconfig the operator runs with; a ConfigError saying what to set when there is none. */
export function loadKubeConfig(where: KubeEnvironment = processEnvironment): KubeConfig {
  const inCluster = Boolean(where.env.KUBERNETES_SERVICE_HOST && where.env.KUBERNETES_SERVICE_PORT);
  const homeConfig = join(where.home, '.kube', 'config');
  if (!where.env.KUBECONFIG && !inCluster && !where.exists(homeConfig))
    throw new ConfigError(
      `no Kubernetes cluster to run against: set KUBECONFIG to a kubeconfig file, put one at ${homeConfig}, ` +
        'or run the operator in a cluster (its service account); see docs/operator.md',
    );
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromDefault();
  return kubeConfig;
}
