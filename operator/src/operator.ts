import {
  ApiextensionsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  type KubernetesListObject,
} from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { LiveCatalogue } from '../../core/catalogue/index.js';
import type { Catalogue } from '../../core/config/index.js';
import { databaseTargetFromSettings, openDatabase, type Database } from '../../core/db/index.js';
import { KeyRepository } from '../../core/keys/index.js';
import { RegionPolicyRepository } from '../../core/regions/index.js';
import { bindAtStart, openStore, type Store } from '../../core/store/index.js';
import {
  createLogger,
  createMetricsRegistry,
  createOperatorMetrics,
  startMetricsServer,
  type MetricsServer,
  type OperatorMetrics,
} from '../../core/telemetry/index.js';
import { withRequestTimeout } from './kube/bounded-request.js';
import { Controller, type ControllerTuning } from './kube/controller.js';
import { LeaderElector } from './kube/leader-election.js';
import { ManagedKeyReconciler } from './managed-key/reconciler.js';
import { keySecretLabel, managedKeyApi, type ManagedKeyObject } from './managed-key/resource.js';
import { RegionPolicyReconciler } from './region-policy/reconciler.js';
import { regionPolicyApi, type RegionPolicyObject } from './region-policy/resource.js';
import type { OperatorSettings } from './settings.js';
import { EventRecorder } from './kube/events.js';
import { applyBundledCrds, readBundledCrds } from './crd/installer.js';

/** A running operator replica. */
export interface RunningOperator {
  /** True while this replica holds the Lease and runs the controllers. */
  readonly isLeader: boolean;
  /** Where Prometheus scrapes it (and /health answers), unless metrics are off. */
  metricsUrl: string | undefined;
  metrics: OperatorMetrics;
  /** Stops the controllers, releases the Lease and closes what it opened. */
  stop(): Promise<void>;
}

/** What the caller (main.ts or a test) provides or already owns. */
export interface OperatorOverrides {
  kubeConfig: KubeConfig;
  database?: Database;
  store?: Store;
  logger?: Logger;
  catalogue?: Catalogue;
  clock?: () => number;
  /** Serve /metrics and /health on an ephemeral port whatever SVC_METRICS_PORT says (tests). */
  metricsOnEphemeralPort?: boolean;
  /** Where the CRDs applied with SVC_OPERATOR_APPLY_CRDS are read from (default: the bundled ones). */
  crdDir?: string;
}

/** Only the key Secrets the operator writes (managed-key/reconciler.ts) are watched. */
const ownedSecretSelector = `${keySecretLabel.name}=${keySecretLabel.value}`;

/**
 * Names specs are checked against, read from the catalogue at each check: a live (database)
 * catalogue changes under the operator, and a reconcile must see the names in force now.
 */
function catalogueNames(catalogue: Catalogue | undefined) {
  if (!catalogue) return { names: undefined, supplierRegions: undefined };
  return {
    names: {
      get models() {
        return new Set(catalogue.routes.keys());
      },
      get regions() {
        return new Set(catalogue.suppliers.map((s) => s.region));
      },
    },
    supplierRegions: () => new Map(catalogue.suppliers.map((s) => [s.name, s.region])),
  };
}

/**
 * Starts one operator replica: it campaigns for the Lease and, while leading, runs one
 * controller per kind (ManagedKey, RegionPolicy). Losing the Lease stops the controllers;
 * winning it again starts fresh ones.
 */
export async function startOperator(settings: OperatorSettings, overrides: OperatorOverrides): Promise<RunningOperator> {
  const logger = overrides.logger ?? createLogger({ service: 'operator', level: settings.LOG_LEVEL });
  const registry = createMetricsRegistry();
  const metrics = createOperatorMetrics(registry);
  const database = overrides.database ?? (await openDatabase(databaseTargetFromSettings(settings)));
  if (!overrides.database) await database.migrate();
  const store = overrides.store ?? openStore(settings);
  // Before anything reads the store: a prefix another installation uses is refused.
  await bindAtStart(database, store, {
    rebind: settings.SVC_STORE_REBIND,
    warn: (message) => logger.warn(message),
    owned: { store: !overrides.store, database: !overrides.database },
  });
  const { kubeConfig } = overrides;
  // No request of a leader may outlast the time it may go without renewing its Lease.
  const apiConfig = withRequestTimeout(kubeConfig, settings.SVC_LEASE_RENEW_DEADLINE_MS);
  if (settings.SVC_OPERATOR_APPLY_CRDS) {
    // Every replica applies at start, before it competes for the Lease: the schema is in place
    // before any controller of this release reads objects, and an older replica leaves it alone.
    const outcomes = await applyBundledCrds(apiConfig.makeApiClient(ApiextensionsV1Api), readBundledCrds(overrides.crdDir), logger);
    for (const { name, decision } of outcomes) metrics.crdApplies.inc({ crd: name, outcome: decision.action });
  }
  const customObjects = apiConfig.makeApiClient(CustomObjectsApi);
  const core = apiConfig.makeApiClient(CoreV1Api);
  const clock = overrides.clock ?? Date.now;
  // The stored catalogue, when it is the source of truth (SVC_CATALOG_SOURCE=database): the file
  // given is only the fallback until a gateway seeded the database.
  const liveCatalogue =
    overrides.catalogue && settings.SVC_CATALOG_SOURCE === 'database'
      ? new LiveCatalogue(overrides.catalogue, { knex: database.knex, store, env: process.env, pepper: settings.SVC_KEY_PEPPER, logger })
      : undefined;
  await liveCatalogue?.start();
  const { names, supplierRegions } = catalogueNames(liveCatalogue ?? overrides.catalogue);
  const tuning: ControllerTuning = {
    resyncMs: settings.SVC_OPERATOR_RESYNC_MS,
    watchTimeoutSeconds: settings.SVC_OPERATOR_WATCH_TIMEOUT_S,
    concurrency: settings.SVC_OPERATOR_CONCURRENCY,
    baseRetryMs: settings.SVC_OPERATOR_RETRY_BASE_MS,
    maxRetryMs: settings.SVC_OPERATOR_RETRY_MAX_MS,
  };
  const managedKeys = new ManagedKeyReconciler({
    customObjects,
    core,
    keys: new KeyRepository(database.knex, settings.SVC_KEY_PEPPER),
    store,
    pepper: settings.SVC_KEY_PEPPER,
    catalogue: names,
    budgetRefreshMs: settings.SVC_OPERATOR_BUDGET_REFRESH_MS,
    budgetStatusThrottle: {
      minChangeShare: settings.SVC_OPERATOR_BUDGET_STATUS_MIN_CHANGE,
      maxAgeMs: settings.SVC_OPERATOR_BUDGET_STATUS_MAX_AGE_MS,
    },
    clock,
    logger,
    events: new EventRecorder(core, settings.POD_NAME, clock, logger),
  });
  const regionPolicies = new RegionPolicyReconciler({
    customObjects,
    policies: new RegionPolicyRepository(database.knex),
    store,
    supplierRegions,
    clock,
    logger,
  });
  const { group, version } = managedKeyApi;
  const watchNamespaces = new Set(settings.SVC_OPERATOR_WATCH_NAMESPACES);
  const watched = (key: string) => watchNamespaces.size === 0 || watchNamespaces.has(key.split('/')[0] ?? '');
  const listManagedKeys = async () =>
    (await customObjects.listCustomObjectForAllNamespaces({
      group,
      version,
      plural: managedKeyApi.plural,
    })) as KubernetesListObject<ManagedKeyObject>;
  const listRegionPolicies = async () =>
    (await customObjects.listClusterCustomObject({
      group,
      version,
      plural: regionPolicyApi.plural,
    })) as KubernetesListObject<RegionPolicyObject>;
  const buildControllers = () => [
    new Controller<ManagedKeyObject>(
      kubeConfig,
      {
        kind: managedKeyApi.kind,
        path: `/apis/${group}/${version}/${managedKeyApi.plural}`,
        list: listManagedKeys,
        // Outside the watched namespaces the operator may not write Secrets: such keys are left alone.
        reconcile: (key) => (watched(key) ? managedKeys.reconcile(key) : Promise.resolve({})),
        owned: {
          kind: 'Secret',
          labelSelector: ownedSecretSelector,
          // Only where the operator may read Secrets: everywhere, or each watched namespace.
          collections:
            watchNamespaces.size === 0
              ? [{ path: '/api/v1/secrets', list: () => core.listSecretForAllNamespaces({ labelSelector: ownedSecretSelector }) }]
              : [...watchNamespaces].map((namespace) => ({
                  path: `/api/v1/namespaces/${namespace}/secrets`,
                  list: () => core.listNamespacedSecret({ namespace, labelSelector: ownedSecretSelector }),
                })),
          ownerKey: (secret) => {
            const owner = secret.metadata?.ownerReferences?.find((r) => r.kind === managedKeyApi.kind && r.controller);
            return owner && secret.metadata?.namespace ? `${secret.metadata.namespace}/${owner.name}` : undefined;
          },
        },
      },
      tuning,
      metrics,
      logger,
    ),
    new Controller<RegionPolicyObject>(
      kubeConfig,
      {
        kind: regionPolicyApi.kind,
        path: `/apis/${group}/${version}/${regionPolicyApi.plural}`,
        list: listRegionPolicies,
        reconcile: (key) => regionPolicies.reconcile(key),
      },
      tuning,
      metrics,
      logger,
    ),
  ];

  let controllers: Controller<never>[] | undefined;
  let stoppingControllers: Promise<unknown> = Promise.resolve();
  const elector = new LeaderElector(
    apiConfig.makeApiClient(CoordinationV1Api),
    {
      namespace: settings.POD_NAMESPACE,
      leaseName: settings.SVC_LEASE_NAME,
      identity: settings.POD_NAME,
      leaseDurationMs: settings.SVC_LEASE_DURATION_MS,
      renewDeadlineMs: settings.SVC_LEASE_RENEW_DEADLINE_MS,
      retryPeriodMs: settings.SVC_LEASE_RETRY_MS,
      logger,
      clock,
    },
    {
      onStartedLeading: () => {
        metrics.leader.set(1);
        // A new term waits for the previous term's reconciles to finish, so two never overlap.
        const previous = stoppingControllers;
        const started = buildControllers() as Controller<never>[];
        controllers = started;
        void previous.then(() => {
          if (controllers !== started) return;
          for (const c of started) c.start();
          // Rows whose object went while no operator ran: no event will ever name them.
          void managedKeys
            .sweepOrphans(async () => (await listManagedKeys()).items)
            .catch((error: unknown) => logger.warn({ err: error }, 'orphaned key sweep failed; the next term retries'));
          void regionPolicies
            .sweepOrphans(async () => (await listRegionPolicies()).items)
            .catch((error: unknown) => logger.warn({ err: error }, 'orphaned region policy sweep failed; the next term retries'));
        });
      },
      onStoppedLeading: () => {
        metrics.leader.set(0);
        const ending = controllers ?? [];
        controllers = undefined;
        stoppingControllers = Promise.all(ending.map((c) => c.stop()));
        return stoppingControllers;
      },
    },
  );
  let stopped = false;
  const metricsServer: MetricsServer | undefined =
    overrides.metricsOnEphemeralPort || settings.SVC_METRICS_PORT !== 0
      ? await startMetricsServer(registry, {
          host: settings.SVC_HOST,
          port: overrides.metricsOnEphemeralPort ? 0 : settings.SVC_METRICS_PORT,
          // Alive unless stopping, or a controller of this leader has a reconcile hung past the limit.
          health: () => !stopped && (controllers ?? []).every((c) => c.longestRunningMs() < settings.SVC_OPERATOR_STUCK_AFTER_MS),
        })
      : undefined;
  elector.start();
  logger.info(
    { identity: settings.POD_NAME, lease: `${settings.POD_NAMESPACE}/${settings.SVC_LEASE_NAME}` },
    'operator started; campaigning for the Lease',
  );

  let stopping: Promise<void> | undefined;
  return {
    get isLeader() {
      return elector.isLeader;
    },
    metricsUrl: metricsServer?.url,
    metrics,
    stop: () => {
      stopping ??= (async () => {
        stopped = true;
        await elector.stop();
        await stoppingControllers;
        await metricsServer?.close();
        await liveCatalogue?.stop();
        if (!overrides.store) await store.close();
        if (!overrides.database) await database.close();
      })();
      return stopping;
    },
  };
}
