// Production behaviour of the Helm chart (issue 21): GitOps-safe secrets (an existing Secret,
// nothing generated at render time, pods restarted when the Secret changes) and the value sets
// in charts/svc-gateway/ci lint and render.
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, it } from 'vitest';
import { helmBinary, helmUnavailable, parseManifests, runHelm, type HelmRun, type RenderedObject } from './support-helm.js';
import { kubernetesSchemaErrors } from './support-kube-models.js';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const chart = join(repo, 'charts', 'svc-gateway');
const ciValueSets = readdirSync(join(chart, 'ci'))
  .filter((f) => f.endsWith('.yaml'))
  .sort();
const gitopsValues = join(chart, 'ci', 'gitops-values.yaml');
const pepper = 'pepper-pepper-pepper-pepper-pepper-0001';
const adminKey = 'admin-admin-admin-admin-admin-admin-0001';
const external = [
  '--set',
  'postgresql.bundled=false',
  '--set',
  'redis.bundled=false',
  '--set',
  'secrets.databaseUrl=postgres://svc@db:5432/svc',
  '--set',
  'secrets.redisUrl=redis://cache:6379',
];

interface Deployment extends RenderedObject {
  spec: {
    template: {
      metadata: { annotations?: Record<string, string> };
      spec: { containers: Array<{ envFrom?: Array<{ secretRef?: { name: string } }> }> };
    };
  };
}
interface Secret extends RenderedObject {
  stringData: Record<string, string>;
}

let helm = '';
const noHelm = helmUnavailable();

function template(...args: string[]): HelmRun {
  return runHelm(helm, ['template', 'svc-gateway', chart, '--namespace', 'svc-system', ...args]);
}

function render(...args: string[]): RenderedObject[] {
  const run = template(...args);
  assert.equal(run.status, 0, `helm template ${args.join(' ')} failed: ${run.stderr}`);
  return parseManifests(run.stdout);
}

function deployments(objects: RenderedObject[]): Deployment[] {
  return objects.filter(
    (o): o is Deployment => o.kind === 'Deployment' && o.metadata.labels?.['app.kubernetes.io/component'] !== 'database',
  );
}

/** The checksum/secret annotation of every deployable that reads the Secret (gateway, operator, portal). */
function secretChecksums(objects: RenderedObject[]): string[] {
  return deployments(objects)
    .filter((d) => d.spec.template.spec.containers.some((c) => c.envFrom?.some((e) => e.secretRef)))
    .map((d) => d.spec.template.metadata.annotations?.['checksum/secret'] ?? `${d.metadata.name}: none`);
}

describe.skipIf(noHelm !== undefined)(`chart for production${noHelm ? ` (skipped: ${noHelm})` : ''}`, () => {
  beforeAll(async () => {
    helm = await helmBinary();
  });

  it(`lints --strict and renders valid objects with every ci/ value set (${ciValueSets.join(', ')})`, () => {
    assert.ok(ciValueSets.includes('gitops-values.yaml'), 'a GitOps value set exists');
    for (const file of ciValueSets) {
      const values = join(chart, 'ci', file);
      const lint = runHelm(helm, ['lint', '--strict', chart, '-f', values]);
      assert.equal(lint.status, 0, `helm lint -f ${file}: ${lint.stdout}${lint.stderr}`);
      for (const object of render('-f', values)) {
        assert.equal(kubernetesSchemaErrors(object), undefined, `${file}: ${object.kind} ${object.metadata.name} validates`);
      }
    }
  });

  describe('portal', () => {
    it('runs the portal entry point that exists, with its public addresses taken from the Ingress', () => {
      assert.ok(existsSync(join(repo, 'portal', 'src', 'main.ts')), 'portal/src/main.ts exists (the Deployment runs its build)');
      const defaults = render();
      assert.ok(
        defaults.some((o) => o.kind === 'Deployment' && o.metadata.name === 'svc-gateway-portal'),
        'portal on by default',
      );
      const objects = render('-f', join(chart, 'ci', 'portal-values.yaml'));
      const portal = objects.find((o): o is Deployment => o.kind === 'Deployment' && o.metadata.name === 'svc-gateway-portal');
      const env = (portal?.spec.template.spec.containers[0] as { env?: Array<{ name: string; value?: string }> } | undefined)?.env ?? [];
      const value = (name: string) => env.find((e) => e.name === name)?.value;
      assert.equal(value('SVC_PORTAL_BASE_URL'), 'https://portal.example.com');
      assert.equal(value('SVC_GATEWAY_PUBLIC_URL'), 'https://api.example.com');
      const explicit = render('--set', 'portal.publicUrl=https://portal.corp.example');
      const explicitEnv =
        (
          explicit.find((o): o is Deployment => o.kind === 'Deployment' && o.metadata.name === 'svc-gateway-portal')?.spec.template.spec
            .containers[0] as { env?: Array<{ name: string; value?: string }> }
        ).env ?? [];
      assert.equal(
        explicitEnv.find((e) => e.name === 'SVC_PORTAL_BASE_URL')?.value,
        'https://portal.corp.example',
        'an explicit address wins',
      );
    });
  });

  describe('long streams survive rollouts', () => {
    type Gateway = RenderedObject & {
      spec: {
        template: {
          spec: {
            terminationGracePeriodSeconds: number;
            containers: Array<{
              env: Array<{ name: string; value?: string }>;
              lifecycle: { preStop: { exec: { command: string[] } } };
              readinessProbe: { httpGet: { port: string } };
              livenessProbe: { httpGet: { path: string; port: string } };
            }>;
          };
        };
      };
    };
    const gatewayOf = (objects: RenderedObject[]) =>
      objects.find((o): o is Gateway => o.kind === 'Deployment' && o.metadata.name === 'svc-gateway-gateway')!;

    it('one value (drainSeconds, default the 300 s supplier timeout) sets the drain, the grace period and the Ingress timeouts', () => {
      for (const [drain, args] of [
        [300, []],
        [900, ['--set', 'gateway.drain.drainSeconds=900']],
      ] as const) {
        const objects = render('--set', 'ingress.enabled=true', ...args);
        const gateway = gatewayOf(objects);
        const [c] = gateway.spec.template.spec.containers;
        const preStop = Number(c!.lifecycle.preStop.exec.command[1]);
        assert.equal(
          c!.env.find((e) => e.name === 'SVC_SHUTDOWN_GRACE_MS')?.value,
          String(drain * 1000),
          'the gateway drains for drainSeconds',
        );
        assert.equal(gateway.spec.template.spec.terminationGracePeriodSeconds, preStop + drain + 5, 'grace = preStop + drain + margin');
        const ingress = objects.find((o) => o.kind === 'Ingress')!;
        assert.deepEqual(ingress.metadata.annotations, {
          'nginx.ingress.kubernetes.io/proxy-buffering': 'off',
          'nginx.ingress.kubernetes.io/proxy-request-buffering': 'off',
          'nginx.ingress.kubernetes.io/proxy-read-timeout': String(drain),
          'nginx.ingress.kubernetes.io/proxy-send-timeout': String(drain),
        });
      }
    });

    it('readiness on the API port, liveness on the metrics port (green for the whole drain)', () => {
      const [c] = gatewayOf(render()).spec.template.spec.containers;
      assert.equal(c!.readinessProbe.httpGet.port, 'http');
      assert.deepEqual(c!.livenessProbe.httpGet, { path: '/health', port: 'metrics' });
    });

    it('annotations given for the Ingress win; another ingress class gets no nginx annotations', () => {
      const given = render(
        '--set',
        'ingress.enabled=true',
        '--set-string',
        'ingress.annotations.nginx\\.ingress\\.kubernetes\\.io/proxy-read-timeout=3600',
      );
      assert.equal(
        given.find((o) => o.kind === 'Ingress')!.metadata.annotations?.['nginx.ingress.kubernetes.io/proxy-read-timeout'],
        '3600',
      );
      const traefik = render('--set', 'ingress.enabled=true', '--set', 'ingress.className=traefik');
      assert.equal(traefik.find((o) => o.kind === 'Ingress')!.metadata.annotations, undefined);
    });

    it('the Gateway API alternative: HTTPRoutes for gateway and portal with the drain as timeouts, refusing a route without a Gateway', () => {
      const objects = render(
        '--set',
        'httpRoute.enabled=true',
        '--set',
        'httpRoute.parentRefs[0].name=public',
        '--set',
        'httpRoute.parentRefs[0].namespace=gateway-system',
      );
      type Route = RenderedObject & {
        spec: {
          parentRefs: unknown[];
          hostnames: string[];
          rules: Array<{ backendRefs: Array<{ name: string; port: number }>; timeouts: { request: string; backendRequest: string } }>;
        };
      };
      const routes = objects.filter((o): o is Route => o.kind === 'HTTPRoute');
      assert.deepEqual(
        routes.map((r) => [
          r.spec.hostnames[0],
          r.spec.rules[0]!.backendRefs[0]!.name,
          r.spec.rules[0]!.timeouts.request,
          r.spec.rules[0]!.timeouts.backendRequest,
        ]),
        [
          ['gateway.example.com', 'svc-gateway-gateway', '300s', '300s'],
          ['portal.example.com', 'svc-gateway-portal', '300s', '300s'],
        ],
      );
      assert.deepEqual(routes[0]!.spec.parentRefs, [{ name: 'public', namespace: 'gateway-system' }]);
      const missing = template('--set', 'httpRoute.enabled=true');
      assert.notEqual(missing.status, 0);
      assert.match(missing.stderr, /httpRoute\.parentRefs must name the Gateway/);
    });
  });

  describe('hardening', () => {
    type Pod = RenderedObject & {
      spec: {
        template: {
          metadata: { annotations?: Record<string, string> };
          spec: {
            securityContext?: Record<string, unknown>;
            containers: Array<{
              image: string;
              securityContext?: { allowPrivilegeEscalation?: boolean; capabilities?: { drop?: string[] } };
              resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
            }>;
          };
        };
      };
    };
    const pods = (objects: RenderedObject[]) => objects.filter((o): o is Pod => o.kind === 'Deployment');

    it('every pod, the bundled databases included, meets the restricted Pod Security level and has resources', () => {
      for (const d of pods(render())) {
        const pod = d.spec.template.spec.securityContext ?? {};
        assert.equal(pod.runAsNonRoot, true, `${d.metadata.name}: runAsNonRoot`);
        assert.deepEqual(pod.seccompProfile, { type: 'RuntimeDefault' }, `${d.metadata.name}: seccomp`);
        for (const c of d.spec.template.spec.containers) {
          assert.equal(c.securityContext?.allowPrivilegeEscalation, false, `${d.metadata.name}: no privilege escalation`);
          assert.deepEqual(c.securityContext?.capabilities?.drop, ['ALL'], `${d.metadata.name}: capabilities dropped`);
          assert.ok(c.resources?.requests?.memory && c.resources.limits?.memory, `${d.metadata.name}: memory request and limit`);
        }
      }
    });

    it('an image digest pins every deployable; nameOverride, fullnameOverride and podAnnotations are accepted', () => {
      const digest = `sha256:${'a'.repeat(64)}`;
      const pinned = pods(render('--set', `image.digest=${digest}`)).filter((d) => !/-(postgresql|redis)$/.test(d.metadata.name));
      assert.ok(pinned.length >= 4);
      for (const d of pinned)
        assert.equal(d.spec.template.spec.containers[0]!.image, `ghcr.io/svc-platform/svc-gateway@${digest}`, d.metadata.name);
      assert.notEqual(template('--set', 'image.digest=latest').status, 0, 'a digest must be sha256:<64 hex>');

      const renamed = render(
        '--set',
        'fullnameOverride=llm',
        '--set',
        'nameOverride=llm-gw',
        '--set',
        'podAnnotations.example\\.com/team=platform',
      );
      const gateway = pods(renamed).find((d) => d.metadata.name === 'llm-gateway');
      assert.ok(
        gateway,
        `objects named from fullnameOverride: ${pods(renamed)
          .map((d) => d.metadata.name)
          .join(', ')}`,
      );
      assert.equal(gateway.metadata.labels?.['app.kubernetes.io/name'], 'llm-gw', 'nameOverride in labels');
      assert.equal(gateway.spec.template.metadata.annotations?.['example.com/team'], 'platform', 'pod annotation');
      assert.ok(gateway.spec.template.metadata.annotations?.['checksum/secret'], 'checksums kept beside the annotations');
    });
  });

  describe('network policies', () => {
    type Peer = { namespaceSelector?: { matchLabels: Record<string, string> }; podSelector?: { matchLabels: Record<string, string> } };
    type Policy = RenderedObject & {
      spec: {
        podSelector: { matchLabels: Record<string, string> };
        policyTypes: string[];
        ingress?: Array<{ from: Peer[]; ports?: Array<{ port: string | number }> }>;
        egress?: Array<{ ports: Array<{ port: number; protocol: string }> }>;
      };
    };
    const policies = (objects: RenderedObject[]) =>
      new Map(
        objects
          .filter((o): o is Policy => o.kind === 'NetworkPolicy')
          .map((p) => [p.metadata.labels?.['app.kubernetes.io/component'] ?? '', p]),
      );
    const sources = (p: Policy, port: string) =>
      (p.spec.ingress ?? []).filter((r) => r.ports?.some((x) => x.port === port)).flatMap((r) => r.from.map((f) => JSON.stringify(f)));

    it('off by default; on: API ports from the ingress namespace (and the release), metrics from monitoring, databases and simulator from the release only', () => {
      assert.equal(policies(render()).size, 0, 'none by default');
      const byComponent = policies(render('--set', 'networkPolicy.enabled=true'));
      assert.deepEqual([...byComponent.keys()].sort(), ['gateway', 'operator', 'portal', 'postgresql', 'redis', 'simulator']);
      const ingressNs = JSON.stringify({ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress-nginx' } } });
      const monitoring = JSON.stringify({ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } });
      const release = JSON.stringify({ podSelector: { matchLabels: { 'app.kubernetes.io/instance': 'svc-gateway' } } });
      for (const component of ['gateway', 'portal']) {
        const p = byComponent.get(component)!;
        assert.equal(p.spec.podSelector.matchLabels['app.kubernetes.io/component'], component);
        assert.deepEqual(sources(p, 'http'), [ingressNs, release], `${component}: API port`);
        assert.deepEqual(sources(p, 'metrics'), [monitoring], `${component}: metrics`);
      }
      const operator = byComponent.get('operator')!;
      assert.deepEqual(operator.spec.policyTypes, ['Ingress', 'Egress']);
      assert.deepEqual(sources(operator, 'metrics'), [monitoring], 'operator: only scrapes come in');
      assert.equal(sources(operator, 'http').length, 0, 'operator: no API port');
      const egressPorts = (operator.spec.egress ?? []).flatMap((r) => r.ports.map((p) => `${p.protocol}/${p.port}`)).sort();
      assert.deepEqual(
        egressPorts,
        ['TCP/443', 'TCP/53', 'TCP/5432', 'TCP/6379', 'TCP/6380', 'TCP/6443', 'UDP/53'],
        'operator: DNS, API server, databases',
      );
      for (const component of ['postgresql', 'redis', 'simulator']) {
        assert.deepEqual(
          (byComponent.get(component)!.spec.ingress ?? []).flatMap((r) => r.from.map((f) => JSON.stringify(f))),
          [release],
          `${component}: the release only`,
        );
      }
    });

    it('a separate audit writer takes only scrapes and reaches only DNS and the databases', () => {
      const byComponent = policies(render('--set', 'networkPolicy.enabled=true', '--set', 'gateway.auditWriter.separate=true'));
      const writer = byComponent.get('audit-writer')!;
      assert.ok(writer, 'a policy for the audit writer pods');
      assert.deepEqual(writer.spec.policyTypes, ['Ingress', 'Egress']);
      assert.equal(sources(writer, 'http').length, 0, 'no API port');
      assert.equal(sources(writer, 'metrics').length, 1, 'scrapes');
      const egressPorts = (writer.spec.egress ?? []).flatMap((r) => r.ports.map((p) => `${p.protocol}/${p.port}`)).sort();
      assert.deepEqual(egressPorts, ['TCP/53', 'TCP/5432', 'TCP/6379', 'TCP/6380', 'UDP/53'], 'DNS and databases, no API server');
    });
  });

  describe('autoscaling', () => {
    it('CPU by default; requests in flight per pod as a second target when asked', () => {
      type Hpa = RenderedObject & {
        spec: {
          metrics: Array<{
            type: string;
            resource?: { name: string };
            pods?: { metric: { name: string }; target: { type: string; averageValue: string } };
          }>;
        };
      };
      const hpaOf = (objects: RenderedObject[]) => objects.find((o): o is Hpa => o.kind === 'HorizontalPodAutoscaler')!;
      assert.deepEqual(
        hpaOf(render()).spec.metrics.map((m) => m.type),
        ['Resource'],
      );
      const both = hpaOf(
        render('--set', 'gateway.autoscaling.inFlight.enabled=true', '--set-string', 'gateway.autoscaling.inFlight.averageValue=30'),
      );
      assert.deepEqual(
        both.spec.metrics.map((m) => m.resource?.name ?? m.pods?.metric.name),
        ['cpu', 'svc_gateway_requests_in_flight'],
      );
      assert.deepEqual(both.spec.metrics[1]!.pods!.target, { type: 'AverageValue', averageValue: '30' });
    });
  });

  describe('node drains', () => {
    it('one gateway replica renders no PDB (it would block every node drain); two or more keep it', () => {
      const single = render('-f', join(chart, 'ci', 'namespaced-rbac-values.yaml'));
      assert.ok(!single.some((o) => o.kind === 'PodDisruptionBudget'), 'no PDB for a single replica');
      const autoscaledToOne = render('--set', 'gateway.autoscaling.minReplicas=1');
      assert.ok(!autoscaledToOne.some((o) => o.kind === 'PodDisruptionBudget'), 'no PDB when the HPA may scale to one');
      assert.ok(
        render().some((o) => o.kind === 'PodDisruptionBudget'),
        'the defaults (at least 2 replicas) keep their PDB',
      );
    });

    it('a minAvailable as large as the fewest replicas is refused, naming both numbers', () => {
      const run = template('--set', 'gateway.podDisruptionBudget.minAvailable=2');
      assert.notEqual(run.status, 0, 'refused');
      assert.match(run.stderr, /gateway\.podDisruptionBudget\.minAvailable \(2\) must be below the gateway's fewest replicas \(2\)/);
    });
  });

  describe('secrets', () => {
    it('GitOps value set: no Secret, nothing generated, two renders identical, every deployable reads the existing Secret', () => {
      const first = template('-f', gitopsValues);
      const second = template('-f', gitopsValues);
      assert.equal(first.status, 0, first.stderr);
      assert.equal(first.stdout, second.stdout, 'a GitOps render is reproducible (no random value)');
      const objects = parseManifests(first.stdout);
      assert.ok(!objects.some((o) => o.kind === 'Secret'), 'the chart renders no Secret');
      for (const d of deployments(objects).filter((d) => !d.metadata.name.endsWith('-simulator'))) {
        assert.ok(
          d.spec.template.spec.containers.every((c) => c.envFrom?.some((e) => e.secretRef?.name === 'svc-platform-secrets')),
          `${d.metadata.name} reads svc-platform-secrets`,
        );
      }
    });

    it('generate=false without an existing Secret or given values fails the render, naming what to set', () => {
      const run = template('--set', 'secrets.generate=false', ...external);
      assert.notEqual(run.status, 0, 'render refused');
      assert.match(run.stderr, /secrets\.generate is false and SVC_[A-Z_]+ is neither given nor in the cluster's Secret/);
      assert.match(run.stderr, /secrets\.existingSecret/);
      const bundled = template(
        '--set',
        'secrets.generate=false',
        '--set',
        `secrets.keyPepper=${pepper}`,
        '--set',
        `secrets.adminKey=${adminKey}`,
      );
      assert.notEqual(bundled.status, 0, 'bundled database passwords cannot be generated either');
      assert.match(bundled.stderr, /POSTGRES_PASSWORD|REDIS_PASSWORD/);
    });

    it('generate=false with given values renders them; extraData adds SSO and payment credentials to the Secret', () => {
      const objects = render(
        '--set',
        'secrets.generate=false',
        '--set',
        `secrets.keyPepper=${pepper}`,
        '--set',
        `secrets.adminKey=${adminKey}`,
        ...external,
        '--set',
        'secrets.extraData.SVC_SSO_A_CLIENT_SECRET=sso-secret',
        '--set',
        'secrets.extraData.STRIPE_SECRET_KEY=sk_test_1',
      );
      const secret = objects.find((o): o is Secret => o.kind === 'Secret');
      assert.ok(secret, 'the chart Secret');
      assert.deepEqual(secret.stringData, {
        DATABASE_URL: 'postgres://svc@db:5432/svc',
        REDIS_URL: 'redis://cache:6379',
        SVC_ADMIN_KEY: adminKey,
        SVC_KEY_PEPPER: pepper,
        SVC_SSO_A_CLIENT_SECRET: 'sso-secret',
        STRIPE_SECRET_KEY: 'sk_test_1',
      });
    });

    it('extraData may not override the keys the chart owns', () => {
      const run = template('--set', 'secrets.extraData.SVC_KEY_PEPPER=x');
      assert.notEqual(run.status, 0, 'refused');
      assert.match(run.stderr, /secrets\.extraData\.SVC_KEY_PEPPER: the chart sets SVC_KEY_PEPPER itself/);
    });

    it('every deployable carries one checksum of the Secret it reads, and it changes with the Secret', () => {
      const given = ['--set', `secrets.keyPepper=${pepper}`, ...external];
      const before = secretChecksums(render(...given, '--set', `secrets.adminKey=${adminKey}`));
      const same = secretChecksums(render(...given, '--set', `secrets.adminKey=${adminKey}`));
      const after = secretChecksums(render(...given, '--set', `secrets.adminKey=${adminKey.replace('0001', '0002')}`));
      assert.equal(before.length, 3, `gateway, operator and portal annotated: ${before.join(', ')}`);
      assert.ok(
        before.every((c) => /^[0-9a-f]{64}$/.test(c)),
        `sha256 checksums: ${before.join(', ')}`,
      );
      assert.equal(new Set(before).size, 1, 'one checksum for one Secret');
      assert.deepEqual(same, before, 'unchanged Secret: pods keep running');
      assert.notEqual(after[0], before[0], 'a new admin key restarts the pods');
      const generated = render();
      assert.equal(new Set(secretChecksums(generated)).size, 1, 'generated values: the Secret and every checksum agree on one render');
    });
  });
});
