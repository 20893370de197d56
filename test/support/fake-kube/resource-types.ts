/** One kind the fake API server serves: where it lives in the REST tree and how it behaves. */
export interface ResourceType {
  /** API group; '' is the core group (served under /api/v1). */
  group: string;
  version: string;
  kind: string;
  plural: string;
  namespaced: boolean;
  /** With a status subresource, the main resource ignores status and /status ignores the rest. */
  statusSubresource: boolean;
  shortNames?: string[];
}

/** `group/version`, or just `version` for the core group (the apiVersion field of an object). */
export function apiVersionOf(type: ResourceType): string {
  return type.group ? `${type.group}/${type.version}` : type.version;
}

/** A stable identifier of a resource type, used as a map key. */
export function typeId(type: Pick<ResourceType, 'group' | 'plural'>): string {
  return `${type.plural}.${type.group}`;
}

/** CustomResourceDefinitions are served (cluster-scoped, with status) so an operator can apply them. */
export const crdType: ResourceType = {
  group: 'apiextensions.k8s.io',
  version: 'v1',
  kind: 'CustomResourceDefinition',
  plural: 'customresourcedefinitions',
  namespaced: false,
  statusSubresource: true,
  shortNames: ['crd'],
};

/** Built-in kinds the operator and the tests use. */
export const builtInTypes: readonly ResourceType[] = [
  { group: '', version: 'v1', kind: 'Namespace', plural: 'namespaces', namespaced: false, statusSubresource: true, shortNames: ['ns'] },
  { group: '', version: 'v1', kind: 'Secret', plural: 'secrets', namespaced: true, statusSubresource: false },
  { group: '', version: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true, statusSubresource: false, shortNames: ['cm'] },
  { group: 'coordination.k8s.io', version: 'v1', kind: 'Lease', plural: 'leases', namespaced: true, statusSubresource: false },
  { group: '', version: 'v1', kind: 'Event', plural: 'events', namespaced: true, statusSubresource: false, shortNames: ['ev'] },
  crdType,
];

/**
 * The project's custom resources (crds/): ManagedKey is namespaced, RegionPolicy cluster-scoped,
 * both with a status subresource.
 */
export const gatewayCustomTypes: readonly ResourceType[] = [
  {
    group: 'gateway.svc.dev',
    version: 'v1alpha1',
    kind: 'ManagedKey',
    plural: 'managedkeys',
    namespaced: true,
    statusSubresource: true,
    shortNames: ['mk'],
  },
  {
    group: 'gateway.svc.dev',
    version: 'v1alpha1',
    kind: 'RegionPolicy',
    plural: 'regionpolicies',
    namespaced: false,
    statusSubresource: true,
    shortNames: ['rp'],
  },
];
