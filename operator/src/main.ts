// Entry point of the operator deployable: settings from the environment, the cluster from the
// in-cluster service account or KUBECONFIG. Wiring lives in operator.ts.
import { ConfigError, loadCatalogue, stopOnSignals } from '../../core/config/index.js';
import { loadKubeConfig } from './kube-config.js';
import { startOperator } from './operator.js';
import { parseOperatorSettings } from './settings.js';

async function main(): Promise<void> {
  const settings = parseOperatorSettings(process.env);
  const kubeConfig = loadKubeConfig();
  const catalogue = settings.SVC_CATALOG ? loadCatalogue(settings.SVC_CATALOG, process.env) : undefined;
  const operator = await startOperator(settings, { kubeConfig, ...(catalogue && { catalogue }) });
  stopOnSignals(() => operator.stop(), 'stopping controllers and releasing the Lease', {
    ready: `operator ${settings.POD_NAME} started; metrics and /health: ${operator.metricsUrl ?? 'off'}`,
  });
}

main().catch((error: unknown) => {
  console.error(error instanceof ConfigError ? `configuration error: ${error.message}` : error);
  process.exit(1);
});
