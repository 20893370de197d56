// Entry point of the portal deployable: configured by the environment only (docs/portal.md).
import { ConfigError, parsePortalSettings, stopOnSignals } from '../../core/config/index.js';
import { startPortal } from './server.js';

async function main(): Promise<void> {
  const settings = parsePortalSettings(process.env);
  const portal = await startPortal(settings);
  console.log(
    `portal listening on ${portal.url} (public address ${portal.deps.settings.SVC_PORTAL_BASE_URL}); metrics: ${portal.metricsUrl ?? 'off'}`,
  );
  stopOnSignals(() => portal.stop(), 'closing the portal');
}

main().catch((error: unknown) => {
  console.error(error instanceof ConfigError ? `configuration error: ${error.message}` : error);
  process.exit(1);
});
