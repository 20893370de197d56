// `npm start`: the whole platform on embedded defaults, for a first look on a fresh machine.
// Starts the supplier simulator, the gateway and the portal (the operator needs a Kubernetes API, so it is not here), creates a
// demo key and a verified demo owner once, and prints how to call it and how to sign in. Data
// lives under SVC_DATA_DIR (default ./.data). With no STRIPE_SECRET_KEY in the environment it also
// runs the local test payment processor (./payment-processor) and gives the portal its test keys,
// so a top-up can be walked through end to end without a processor account; no money moves.
import { randomBytes } from 'node:crypto';
import { join, resolve } from 'node:path';
import { ConfigError, loadConfig, parsePortalSettings, stopOnSignals } from '../../core/config/index.js';
import { DataDirLockedError, databaseTargetFromSettings, lockDataDir, openDatabase } from '../../core/db/index.js';
import { webhookPath } from '../../core/billing/index.js';
import { ensureVerifiedOwner, type BootstrappedOwner } from '../../core/identity/index.js';
import { announceKeyChange, hashSecret, KeyRepository } from '../../core/keys/index.js';
import { openStore } from '../../core/store/index.js';
import { startTracing } from '../../core/telemetry/index.js';
import { startGateway } from '../../gateway/src/server.js';
import { tokenCounter } from '../../gateway/src/tokens/count.js';
import { startPortal } from '../../portal/src/server.js';
import { startSimulator } from '../../test/simulator/server.js';
import { banner, mailDestination } from './banner.js';
import { loadLocalCredentials, saveLocalCredentials } from './credentials.js';
import { writeDemoCatalogue } from './demo-catalogue.js';
import { startLocalTestProcessor } from './payment-processor/index.js';
import { followSimulator } from './follow-simulator.js';
import { assertPortsFree, portInUse, portSetting } from './port-in-use.js';

async function main(): Promise<void> {
  const dataDir = resolve(process.env.SVC_DATA_DIR ?? './.data');
  // First, before any port or file is touched: one `npm start` per data directory.
  lockDataDir(dataDir);
  const credentials = loadLocalCredentials(dataDir);
  // Nothing else is printed until the banner; the first start creates the database, which takes a while.
  console.log(
    credentials.demoKey
      ? `Starting the platform from ${dataDir} …`
      : `Starting the platform for the first time in ${dataDir}: creating the database takes up to a minute …`,
  );

  const simPort = Number(process.env.SIM_PORT ?? 8090);
  // Read before anything starts, so that a bad value stops nothing half-way.
  const paymentsPort = portSetting(process.env, 'PAYMENTS_PORT');
  const portalMetricsPort = portSetting(process.env, 'PORTAL_METRICS_PORT');
  // A port another program holds is named now, not after the database was opened (a first start
  // takes a while creating it).
  await assertPortsFree(process.env, process.env.SVC_HOST ?? '127.0.0.1');
  const simulator = await startSimulator({ port: simPort, name: 'demo-simulator' }).catch((error: unknown) => {
    throw new Error(`cannot start the supplier simulator on port ${simPort} (set SIM_PORT to a free port): ${String(error)}`, {
      cause: error,
    });
  });
  const env = {
    SVC_HOST: '127.0.0.1',
    SVC_ADMIN_KEY: credentials.adminKey,
    SVC_KEY_PEPPER: credentials.pepper,
    ...process.env,
    // The demo catalogue points at the simulator just started, unless the caller brings its own.
    SVC_CATALOG: process.env.SVC_CATALOG ?? writeDemoCatalogue(dataDir, simulator.url),
    SVC_DATA_DIR: dataDir,
  };
  const config = loadConfig(env);
  // One OpenTelemetry SDK per process, configured by the standard OTEL_* variables (as gateway/src/main.ts).
  const tracing = startTracing({ serviceName: 'svc-gateway' });

  const database = await openDatabase(databaseTargetFromSettings(config.settings));
  await database.migrate();
  // The stored demo catalogue follows the simulator to the port this start gave it (follow-simulator.ts).
  if (!process.env.SVC_CATALOG && config.settings.SVC_CATALOG_SOURCE === 'database') {
    const before = await followSimulator(database.knex, simulator.url, { env, pepper: config.settings.SVC_KEY_PEPPER });
    if (before) console.log(`The demo providers pointed at ${before}: moved to the simulator on ${simulator.url}/v1.`);
  }
  const keys = new KeyRepository(database.knex, config.settings.SVC_KEY_PEPPER);
  const existing = credentials.demoKey ? await keys.findByHash(hashSecret(credentials.demoKey, config.settings.SVC_KEY_PEPPER)) : undefined;
  let demoKey = credentials.demoKey;
  if (!existing || !demoKey) {
    demoKey = (await keys.create({ kind: 'managed', name: 'demo', source: 'bootstrap' })).secret;
    saveLocalCredentials(dataDir, { ...credentials, demoKey });
  }

  // One store for both: with the in-process store, two would never see each other's key
  // announcements or wallet-mirror credits (a portal revoke or top-up would not reach the gateway).
  const store = openStore(config.settings);
  const gateway = await startGateway(config, { database, tracing, store });
  // As the gateway's own main does: the token counter thread loads its tokenizer now, not on the first count.
  tokenCounter.warm();
  // Card payments: the caller's processor keys when given, else the local test processor.
  // Its customers and cards are kept beside the data, which survives a restart (the portal's rows name them).
  const payments = process.env.STRIPE_SECRET_KEY
    ? undefined
    : await startLocalTestProcessor({ stateFile: join(dataDir, 'payment-processor.json'), port: paymentsPort ?? 0 });
  const paymentSettings = payments && {
    STRIPE_SECRET_KEY: payments.secretKey,
    STRIPE_PUBLISHABLE_KEY: payments.publishableKey,
    STRIPE_WEBHOOK_SECRET: payments.webhookSecret,
    SVC_STRIPE_API_URL: payments.url,
  };
  // The portal on the same database (PORTAL_PORT, default 3000). Its metrics on a port of their own
  // (the gateway has SVC_METRICS_PORT): PORTAL_METRICS_PORT, else any free one, printed below; with
  // SVC_METRICS_PORT=0 (and no PORTAL_METRICS_PORT) or PORTAL_METRICS_PORT=0 there are none.
  const portal = await startPortal(
    // Nothing proxies to the portal here: no peer may name the client (X-Forwarded-For), unless set.
    parsePortalSettings({
      SVC_GATEWAY_PUBLIC_URL: gateway.url,
      SVC_PORTAL_TRUST_PROXY: 'none',
      ...env,
      ...paymentSettings,
      SVC_METRICS_PORT: String(portalMetricsPort ?? 0),
    }),
    {
      database,
      catalogue: config.catalogue,
      store,
      metricsOnEphemeralPort: portalMetricsPort === undefined && gateway.metricsUrl !== undefined,
    },
  );
  payments?.setWebhookUrl(`${portal.url}${webhookPath}`);
  // Handled before the banner says the platform is running (stopOnSignals' `ready`, here many lines
  // and a bootstrap away): a SIGTERM sent on reading it must find the handlers.
  stopOnSignals(
    async () => {
      await portal.stop();
      await payments?.close();
      await gateway.stop();
      await tokenCounter.stop();
      await store.close();
      await database.close();
      await simulator.close();
      await tracing.shutdown();
      // Two drains one after the other (portal, gateway), then the embedded database's clean close.
    },
    'stopping the portal, the gateway, the payment processor and the simulator',
    { deadlineMs: 2 * config.settings.SVC_SHUTDOWN_GRACE_MS + 60_000 },
  );
  const ownerEmail = 'owner@demo.local';
  const ownerPassword = credentials.demoOwnerPassword ?? `demo-${randomBytes(12).toString('base64url')}`;
  if (!credentials.demoOwnerPassword) saveLocalCredentials(dataDir, { ...loadLocalCredentials(dataDir), demoOwnerPassword: ownerPassword });
  // The printed password is set on the account when this data directory made it; a password the
  // owner chose since in the portal is kept (and not printed as valid).
  const owner = await ensureVerifiedOwner(
    database.knex,
    { email: ownerEmail, displayName: 'Demo owner', password: ownerPassword, legalVersion: portal.deps.settings.SVC_LEGAL_VERSION },
    new Date(),
    { setPassword: !credentials.demoOwnerPassword, ...(credentials.demoOwnerId !== undefined && { knownId: credentials.demoOwnerId }) },
  );
  if (owner.user && owner.user.id !== credentials.demoOwnerId)
    saveLocalCredentials(dataDir, { ...loadLocalCredentials(dataDir), demoOwnerId: owner.user.id });
  // The address people use: SVC_PORTAL_BASE_URL when set (a form posted to another address is refused as cross-site).
  const portalAddress = portal.deps.settings.SVC_PORTAL_BASE_URL;
  const signIn = ownerSignIn(owner, ownerEmail, ownerPassword, portalAddress);
  if (owner.restored) console.log(`No active owner was left: ${ownerEmail} is an active owner again.`);
  for (const secretHash of owner.changedKeys) await announceKeyChange(store, secretHash);
  console.log(`Portal: ${portalAddress}   ${signIn}; ${mailDestination(portal.deps.settings.SVC_SMTP_URL, dataDir)}`);
  if (portal.metricsUrl) console.log(`Portal metrics: ${portal.metricsUrl}`);
  if (payments)
    console.log(
      `Payments: local TEST processor at ${payments.url} (no STRIPE_SECRET_KEY set): top up with card 4242 4242 4242 4242; no money moves`,
    );
  console.log('');
  console.log(
    banner({
      database: config.settings.DATABASE_URL ? 'PostgreSQL from DATABASE_URL' : 'embedded PostgreSQL (PGlite)',
      store: config.settings.REDIS_URL ? 'Redis from REDIS_URL' : 'in-process store',
      gatewayUrl: gateway.url,
      metricsUrl: gateway.metricsUrl,
      tracing: tracing.decision.reason,
      simulatorUrl: simulator.url,
      // The file is what the database copy was seeded from; while the database is the source, the portal's Providers page edits that copy.
      catalogue:
        config.settings.SVC_CATALOG_SOURCE === 'database'
          ? `stored in the database (seeded from ${config.settings.SVC_CATALOG}; the portal's Providers page edits it)`
          : config.settings.SVC_CATALOG,
      dataDir,
      adminKey: config.settings.SVC_ADMIN_KEY,
      demoKey,
    }),
  );
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) console.error(`configuration error: ${error.message}`);
  else if (error instanceof DataDirLockedError) console.error(`npm start: ${error.message}`);
  else console.error(portInUse(error, process.env) ?? error);
  process.exit(1);
});

/** What the banner says of the demo owner: the printed password only while it signs in, as what it now is. */
function ownerSignIn(owner: BootstrappedOwner, email: string, password: string, portalUrl: string): string {
  if (!owner.user) return `the demo owner ${email} was deleted by an administrator; sign in as another administrator`;
  if (owner.user.status !== 'active') return `the demo owner ${email} is ${owner.user.status}; sign in as another administrator`;
  const role = owner.user.role.replace('_', ' ');
  return owner.printedPasswordWorks
    ? `sign in as ${email} / ${password} (${role})`
    : `sign in as ${email} (${role}) with the password you chose (forgotten: ${portalUrl}/forgot-password)`;
}
