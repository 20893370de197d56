import { apiVersionOf, type ResourceType } from './resource-types.js';

const verbs = ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'];

/** `GET /api`: the core group's versions. */
export function coreVersions(): Record<string, unknown> {
  return { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [] };
}

/** `GET /apis`: every named group and its versions. */
export function groupList(types: readonly ResourceType[]): Record<string, unknown> {
  const groups = new Map<string, Set<string>>();
  for (const t of types) if (t.group) groups.set(t.group, (groups.get(t.group) ?? new Set()).add(t.version));
  return {
    kind: 'APIGroupList',
    apiVersion: 'v1',
    groups: [...groups].map(([name, versions]) => {
      const list = [...versions].map((version) => ({ groupVersion: `${name}/${version}`, version }));
      return { name, versions: list, preferredVersion: list[0] };
    }),
  };
}

/** `GET /api/v1` or `GET /apis/<group>/<version>`: the resources of one group version. */
export function resourceList(types: readonly ResourceType[], group: string, version: string): Record<string, unknown> | undefined {
  const matching = types.filter((t) => t.group === group && t.version === version);
  if (matching.length === 0) return undefined;
  return {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: apiVersionOf(matching[0]!),
    resources: matching.flatMap((t) => [
      {
        name: t.plural,
        singularName: t.kind.toLowerCase(),
        namespaced: t.namespaced,
        kind: t.kind,
        verbs,
        ...(t.shortNames && { shortNames: t.shortNames }),
      },
      ...(t.statusSubresource
        ? [{ name: `${t.plural}/status`, singularName: '', namespaced: t.namespaced, kind: t.kind, verbs: ['get', 'patch', 'update'] }]
        : []),
    ]),
  };
}
