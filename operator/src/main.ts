// Entry point of the operator deployable: settings from the environment, the cluster from the
// in-cluster service account or KUBECONFIG. Wiring lives in operator.ts.
import { loadCatalogue, startFailure, stopOnSignals, type ListenPorts } from '../../core/config/index.js';
import { loadKubeConfig } from './kube-config.js';
import { startOperator } from './operator.js';
import { parseOperatorSettings } from './settings.js';

/** The port this process listens on, once its settings are read (a taken one is named in the failure). */
let ports: ListenPorts = [];

async function main(): Promise<void> {
  const settings = parseOperatorSettings(process.env);
  ports = [['SVC_METRICS_PORT', settings.SVC_METRICS_PORT]];
  const kubeConfig = loadKubeConfig();
  const catalogue = settings.SVC_CATALOG ? loadCatalogue(settings.SVC_CATALOG, process.env) : undefined;
  const operator = await startOperator(settings, { kubeConfig, ...(catalogue && { catalogue }) });
  stopOnSignals(() => operator.stop(), 'stopping controllers and releasing the Lease', {
    ready: `operator ${settings.POD_NAME} started; metrics and /health: ${operator.metricsUrl ?? 'off'}`,
  });
}

main().catch((error: unknown) => {
  console.error(startFailure(error, 'operator', ports));
  process.exit(1);
});
