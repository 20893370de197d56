// Validates rendered objects against the Kubernetes OpenAPI schemas as packaged by
// kubernetes-models (core APIs) and @kubernetes-models/prometheus-operator (ServiceMonitor,
// PrometheusRule). These check types, required fields and formats; they accept unknown fields,
// so the chart tests also read the important fields back by name.
import * as prometheusOperator from '@kubernetes-models/prometheus-operator';
import * as kubernetes from 'kubernetes-models';

interface ModelClass {
  new (data: object): { validate(): void };
}
type Versions = Record<string, Record<string, ModelClass | undefined> | undefined>;
const groups = { ...kubernetes, ...prometheusOperator } as unknown as Record<string, Versions | undefined>;

// Module namespaces are named by group in camel case ("networking.k8s.io" → "networkingK8sIo");
// the core group ("v1") is exported under its version.
function modelFor(apiVersion: string, kind: string): ModelClass | undefined {
  const [group = '', version] = apiVersion.includes('/') ? apiVersion.split('/') : ['', apiVersion];
  if (version === undefined) return undefined;
  if (group === '') return (groups[version] as unknown as Record<string, ModelClass | undefined> | undefined)?.[kind];
  const name = group.replace(/[.-]([a-z0-9])/g, (_, c: string) => c.toUpperCase());
  return groups[name]?.[version]?.[kind];
}

/** Errors of one object against its schema; throws when no schema is known for its kind. */
export function kubernetesSchemaErrors(object: { apiVersion: string; kind: string }): string | undefined {
  const Model = modelFor(object.apiVersion, object.kind);
  if (!Model) throw new Error(`no Kubernetes schema known for ${object.apiVersion} ${object.kind}`);
  try {
    new Model(object).validate();
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}
