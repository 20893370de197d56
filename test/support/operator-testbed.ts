import { ApiException, CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions, type KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { startOperator, type RunningOperator } from '../../operator/src/operator.js';
import { parseOperatorSettings } from '../../operator/src/settings.js';
import type { ManagedKeyObject } from '../../operator/src/managed-key/resource.js';
import type { Condition } from '../../operator/src/kube/conditions.js';
import type { Store } from '../../core/store/index.js';
import { kubeForTests, type TestKube } from './fake-kube/index.js';
import { startGatewayHarness, type GatewayHarness, type HarnessSupplier } from './gateway-harness.js';

/** The API group and version of the project's custom resources. */
export const crdGroup = 'gateway.svc.dev';
export const crdVersion = 'v1alpha1';
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/** A Kubernetes API (fake or real), a gateway over real or embedded services, and operators over both. */
export interface OperatorTestbed {
  kube: TestKube;
  gateway: GatewayHarness;
  customObjects: CustomObjectsApi;
  core: CoreV1Api;
  /**
   * Starts an operator replica with short test timings (closed by close() unless stopped
   * before); `kubeConfig` points it at the API another way (through a proxy), `store` gives it
   * another view of the gateway's store (one that fails on demand).
   */
  startOperator(identity?: string, settings?: Record<string, string>, kubeConfig?: KubeConfig, store?: Store): Promise<RunningOperator>;
  /** Creates a ManagedKey in the test namespace. */
  applyManagedKey(name: string, spec: Record<string, unknown>): Promise<ManagedKeyObject>;
  /** Merge-patches a ManagedKey's spec. */
  patchManagedKeySpec(name: string, spec: Record<string, unknown>): Promise<ManagedKeyObject>;
  /** The ManagedKey, or undefined when it does not exist. */
  readManagedKey(name: string): Promise<ManagedKeyObject | undefined>;
  close(): Promise<void>;
}

/** The Lease timings and controller tuning the tests run with (short, so failover is quick). */
export const testOperatorSettings = {
  SVC_LEASE_NAME: 'svc-gateway-operator',
  SVC_LEASE_DURATION_MS: '1500',
  SVC_LEASE_RENEW_DEADLINE_MS: '1000',
  SVC_LEASE_RETRY_MS: '200',
  SVC_OPERATOR_RESYNC_MS: '2000',
  SVC_OPERATOR_WATCH_TIMEOUT_S: '60',
  SVC_OPERATOR_BUDGET_REFRESH_MS: '500',
  SVC_OPERATOR_RETRY_BASE_MS: '50',
  SVC_OPERATOR_RETRY_MAX_MS: '1000',
  SVC_METRICS_PORT: '0',
  LOG_LEVEL: 'silent',
  // As the harness gateway: the catalogue it was given (suites of the stored catalogue ask for it).
  SVC_CATALOG_SOURCE: 'file',
};

/** The condition of a type in an object's status. */
export function conditionOf(object: { status?: { conditions?: Condition[] } } | undefined, type: string): Condition | undefined {
  return object?.status?.conditions?.find((c) => c.type === type);
}

/** True when `error` is an API error with this HTTP status. */
export function isKubeStatus(error: unknown, code: number): boolean {
  return error instanceof ApiException && error.code === code;
}

/** Starts the testbed: Kubernetes API, gateway (with simulators), nothing reconciling yet. */
export async function startOperatorTestbed(suppliers?: HarnessSupplier[]): Promise<OperatorTestbed> {
  const kube = await kubeForTests();
  const gateway = await startGatewayHarness(suppliers);
  const customObjects = kube.kubeConfig.makeApiClient(CustomObjectsApi);
  const core = kube.kubeConfig.makeApiClient(CoreV1Api);
  const operators: RunningOperator[] = [];
  const namespace = kube.namespace;
  const plural = 'managedkeys';
  const readManagedKey = async (name: string) => {
    try {
      return (await customObjects.getNamespacedCustomObject({
        group: crdGroup,
        version: crdVersion,
        namespace,
        plural,
        name,
      })) as ManagedKeyObject;
    } catch (error) {
      if (isKubeStatus(error, 404)) return undefined;
      throw error;
    }
  };
  return {
    kube,
    gateway,
    customObjects,
    core,
    startOperator: async (identity = 'operator-0', settings = {}, kubeConfig = kube.kubeConfig, store = gateway.store) => {
      const operator = await startOperator(
        parseOperatorSettings({
          ...testOperatorSettings,
          SVC_KEY_PEPPER: gateway.pepper,
          POD_NAME: identity,
          POD_NAMESPACE: namespace,
          ...settings,
        }),
        {
          kubeConfig,
          database: gateway.database,
          store,
          catalogue: gateway.config.catalogue,
          logger: pino({ level: 'silent' }),
          metricsOnEphemeralPort: true,
        },
      );
      operators.push(operator);
      return operator;
    },
    applyManagedKey: async (name, spec) =>
      (await customObjects.createNamespacedCustomObject({
        group: crdGroup,
        version: crdVersion,
        namespace,
        plural,
        body: { apiVersion: `${crdGroup}/${crdVersion}`, kind: 'ManagedKey', metadata: { name }, spec },
      })) as ManagedKeyObject,
    patchManagedKeySpec: async (name, spec) =>
      (await customObjects.patchNamespacedCustomObject(
        { group: crdGroup, version: crdVersion, namespace, plural, name, body: { spec } },
        mergePatch,
      )) as ManagedKeyObject,
    readManagedKey,
    close: async () => {
      await Promise.all(operators.map((o) => o.stop()));
      await gateway.close();
      await kube.close();
    },
  };
}

/** A view of a store that fails one chosen call on demand, as a store blip would. */
export interface FlakyStore {
  store: Store;
  /** The next `method` call whose first argument (key or channel) `matches` fails once. */
  failNext(method: 'set' | 'del' | 'publish', matches: (keyOrChannel: string) => boolean): void;
  /** Calls failed so far. */
  readonly failures: number;
}

/** Wraps `store`; calls go through unchanged unless a failure is armed with failNext(). */
export function flakyStore(store: Store): FlakyStore {
  let armed: { method: string; matches: (keyOrChannel: string) => boolean } | undefined;
  let failures = 0;
  const view = new Proxy(store, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (armed && property === armed.method && armed.matches(String(args[0]))) {
          armed = undefined;
          failures += 1;
          return Promise.reject(new Error('injected store failure'));
        }
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return {
    store: view,
    failNext: (method, matches) => {
      armed = { method, matches };
    },
    get failures() {
      return failures;
    },
  };
}
