// Least privilege (issue 21): the operator's rendered RBAC grants exactly the Kubernetes API
// calls operator/src makes, no more and no fewer. The calls are read from the source: every
// client method called (read/create/replace/patch/list/get ...Namespaced/Cluster...), the
// informers' watched collections, and blockOwnerDeletion on owner references (which needs update
// on the owner's finalizers). A call this test does not know fails it, so a new API call cannot
// ship without its grant. With operator.watchNamespaces, key Secrets are granted only there.
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, it } from 'vitest';
import { managedKeyApi } from '../../operator/src/managed-key/resource.js';
import { regionPolicyApi } from '../../operator/src/region-policy/resource.js';
import { helmBinary, helmUnavailable, parseManifests, runHelm, type RenderedObject } from './support-helm.js';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const chart = join(repo, 'charts', 'svc-gateway');
const operatorSource = join(repo, 'operator', 'src');
const group = managedKeyApi.group;

/** One grant: `group|resource|verb` ('' is the core group). */
type Grant = string;
const grant = (apiGroup: string, resource: string, verb: string): Grant => `${apiGroup}|${resource}|${verb}`;

/** What each client method the operator may call needs. ManagedKeys are the namespaced custom resource, RegionPolicies the cluster-scoped one. */
const methodGrants: Readonly<Record<string, Grant>> = {
  readNamespacedSecret: grant('', 'secrets', 'get'),
  createNamespacedSecret: grant('', 'secrets', 'create'),
  replaceNamespacedSecret: grant('', 'secrets', 'update'),
  listSecretForAllNamespaces: grant('', 'secrets', 'list'),
  listNamespacedSecret: grant('', 'secrets', 'list'),
  createNamespacedEvent: grant('', 'events', 'create'),
  readNamespacedLease: grant('coordination.k8s.io', 'leases', 'get'),
  createNamespacedLease: grant('coordination.k8s.io', 'leases', 'create'),
  replaceNamespacedLease: grant('coordination.k8s.io', 'leases', 'update'),
  getNamespacedCustomObject: grant(group, managedKeyApi.plural, 'get'),
  patchNamespacedCustomObject: grant(group, managedKeyApi.plural, 'patch'),
  patchNamespacedCustomObjectStatus: grant(group, `${managedKeyApi.plural}/status`, 'patch'),
  listCustomObjectForAllNamespaces: grant(group, managedKeyApi.plural, 'list'),
  getClusterCustomObject: grant(group, regionPolicyApi.plural, 'get'),
  patchClusterCustomObject: grant(group, regionPolicyApi.plural, 'patch'),
  patchClusterCustomObjectStatus: grant(group, `${regionPolicyApi.plural}/status`, 'patch'),
  listClusterCustomObject: grant(group, regionPolicyApi.plural, 'list'),
  // Server-side apply of the bundled CRDs (operator/src/crd/installer.ts), limited by resourceNames.
  readCustomResourceDefinition: grant('apiextensions.k8s.io', 'customresourcedefinitions', 'get'),
  patchCustomResourceDefinition: grant('apiextensions.k8s.io', 'customresourcedefinitions', 'patch'),
};
const pluralOf: Readonly<Record<string, string>> = { managedKeyApi: managedKeyApi.plural, regionPolicyApi: regionPolicyApi.plural };

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

/** Every grant the operator's code needs, with where it was found. */
function grantsFromCode(): Map<Grant, string> {
  const needed = new Map<Grant, string>();
  for (const file of sourceFiles(operatorSource)) {
    const text = readFileSync(file, 'utf8');
    const where = relative(repo, file);
    for (const [, method] of text.matchAll(
      /\.((?:read|create|replace|patch|delete|list|get|watch)\w*(?:Namespaced|Cluster|ForAllNamespaces|CustomResourceDefinition)\w*)\(/g,
    )) {
      const needs = methodGrants[method!];
      assert.ok(
        needs,
        `${where} calls ${method}, unknown to this test: add the grant it needs here and to charts/svc-gateway/templates/operator-rbac.yaml`,
      );
      needed.set(needs, where);
    }
    // Informers list then watch a collection path.
    for (const [, api] of text.matchAll(/path: `\/apis\/\$\{group\}\/\$\{version\}\/\$\{(\w+)\.plural\}`/g)) {
      const plural = pluralOf[api!];
      assert.ok(plural, `${where} watches ${api}, unknown to this test`);
      for (const verb of ['list', 'watch']) needed.set(grant(group, plural, verb), where);
    }
    // Informers of the key Secrets: all namespaces or one namespace at a time.
    if (/path: '\/api\/v1\/secrets'|path: `\/api\/v1\/namespaces\/\$\{\w+\}\/secrets`/.test(text))
      for (const verb of ['list', 'watch']) needed.set(grant('', 'secrets', verb), where);
    assert.ok(!/makeInformer\(/.test(text) || /path\b/.test(text), `${where} makes informers by path`);
    if (/blockOwnerDeletion: true/.test(text)) needed.set(grant(group, `${managedKeyApi.plural}/finalizers`, 'update'), where);
  }
  return needed;
}

interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}
type RbacObject = RenderedObject & { rules: Rule[] };

function grantsOf(rules: Rule[]): Set<Grant> {
  return new Set(rules.flatMap((r) => r.apiGroups.flatMap((g) => r.resources.flatMap((res) => r.verbs.map((v) => grant(g, res, v))))));
}

/** Grants the key namespaces need (Secrets, Events about ManagedKeys, writing ManagedKeys); the Lease's; the rest cluster-wide. */
const keyScoped = (g: Grant) =>
  g.startsWith('|secrets|') || g.startsWith('|events|') || (g.startsWith(`${group}|${managedKeyApi.plural}`) && !/\|(list|watch)$/.test(g));
const leaseScoped = (g: Grant) => g.startsWith('coordination.k8s.io|leases|');

let helm = '';
const noHelm = helmUnavailable();

function render(...args: string[]): RbacObject[] {
  const run = runHelm(helm, ['template', 'svc-gateway', chart, '--namespace', 'svc-system', ...args]);
  assert.equal(run.status, 0, run.stderr);
  return parseManifests(run.stdout).filter(
    (o): o is RbacObject => (o.kind === 'ClusterRole' || o.kind === 'Role') && o.metadata.name.startsWith('svc-gateway-operator'),
  );
}

const sorted = (grants: Iterable<Grant>) => [...grants].sort();

describe('the operator API calls found in its source', () => {
  it('include the key Secrets, both custom resources with their status, and the Lease', () => {
    const needed = grantsFromCode();
    for (const expected of [
      grant('', 'secrets', 'get'),
      grant('', 'secrets', 'create'),
      grant('', 'secrets', 'watch'),
      grant(group, 'managedkeys', 'watch'),
      grant(group, 'regionpolicies/status', 'patch'),
      grant('coordination.k8s.io', 'leases', 'update'),
    ]) {
      assert.ok(needed.has(expected), `${expected} found (have ${sorted(needed.keys()).join(', ')})`);
    }
  });
});

describe.skipIf(noHelm !== undefined)(`operator RBAC rendered by the chart${noHelm ? ` (skipped: ${noHelm})` : ''}`, () => {
  let needed: Grant[] = [];
  beforeAll(async () => {
    helm = await helmBinary();
    needed = sorted(grantsFromCode().keys());
  });

  it('all namespaces: the ClusterRole and the Lease Role grant exactly what the code calls', () => {
    const objects = render();
    const clusterRole = objects.find((o) => o.kind === 'ClusterRole');
    const leaseRole = objects.find((o) => o.kind === 'Role' && o.metadata.name === 'svc-gateway-operator-leader-election');
    assert.ok(clusterRole && leaseRole, 'ClusterRole and leader-election Role');
    assert.deepEqual(
      sorted(grantsOf(clusterRole.rules)),
      needed.filter((g) => !leaseScoped(g)),
      'ClusterRole = the calls outside the Lease',
    );
    assert.deepEqual(sorted(grantsOf(leaseRole.rules)), needed.filter(leaseScoped), 'Lease Role = the Lease calls');
    assert.equal(objects.filter((o) => o.kind === 'Role').length, 1, 'no per-namespace Roles');
  });

  it('watchNamespaces: Secrets and ManagedKey writes only in those namespaces, each through a Role, nothing cluster-wide', () => {
    const objects = render('--set', 'operator.watchNamespaces={team-a,team-b}');
    const clusterRole = objects.find((o) => o.kind === 'ClusterRole');
    assert.ok(clusterRole, 'ClusterRole');
    assert.deepEqual(
      sorted(grantsOf(clusterRole.rules)),
      needed.filter((g) => !leaseScoped(g) && !keyScoped(g)),
      'ClusterRole: reading ManagedKeys and RegionPolicies only',
    );
    assert.ok(![...grantsOf(clusterRole.rules)].some((g) => g.startsWith('|secrets|')), 'no Secret cluster-wide');
    for (const namespace of ['team-a', 'team-b']) {
      const role = objects.find((o) => o.kind === 'Role' && o.metadata.namespace === namespace);
      assert.ok(role, `Role in ${namespace}`);
      assert.deepEqual(sorted(grantsOf(role.rules)), needed.filter(keyScoped), `${namespace}: the key calls`);
    }
    const granted = new Set(objects.flatMap((o) => [...grantsOf(o.rules)]));
    assert.deepEqual(sorted(granted), needed, 'together: exactly the calls of the code');
  });

  it('tells the operator which namespaces it may reconcile', () => {
    const run = runHelm(helm, [
      'template',
      'svc-gateway',
      chart,
      '--namespace',
      'svc-system',
      '--set',
      'operator.watchNamespaces={team-a,team-b}',
    ]);
    const operator = parseManifests(run.stdout).find((o) => o.kind === 'Deployment' && o.metadata.name === 'svc-gateway-operator') as
      | (RenderedObject & { spec: { template: { spec: { containers: Array<{ env?: Array<{ name: string; value?: string }> }> } } } })
      | undefined;
    const env = operator?.spec.template.spec.containers[0]?.env ?? [];
    assert.equal(env.find((e) => e.name === 'SVC_OPERATOR_WATCH_NAMESPACES')?.value, 'team-a,team-b');
  });

  it("CRDs: get and patch of the chart's own CRDs by name only, and none with operator.manageCRDs=false", () => {
    const crdNames = readdirSync(join(chart, 'crds'))
      .map((file) => /^name: (\S+)$/m.exec(readFileSync(join(chart, 'crds', file), 'utf8').replace(/^ {2}/gm, ''))?.[1])
      .sort();
    const crdRules = (objects: RbacObject[]) =>
      objects.flatMap((o) => o.rules).filter((r) => r.resources.includes('customresourcedefinitions'));
    const [rule, ...others] = crdRules(render());
    assert.equal(others.length, 0, 'one CRD rule');
    assert.deepEqual([...(rule?.resourceNames ?? [])].sort(), crdNames, 'limited to the CRDs in crds/');
    assert.deepEqual([...(rule?.verbs ?? [])].sort(), ['get', 'patch']);
    assert.deepEqual(crdRules(render('--set', 'operator.manageCRDs=false')), [], 'no CRD access when the operator does not manage them');
  });
});
