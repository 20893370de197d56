// The CRDs in crds/ are structural and well-formed, and every example object under
// crds/testdata/<kind>/ is accepted (good-*) or refused for exactly the one reason its
// `# expect:` line names (bad-*). Files with two documents are updates: stored object, then
// the new one (for transition rules such as the immutable secretName).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { celRules, crdValidator, describeViolation, parseCel, readCrd, type Crd, type SchemaNode } from '../support/crd-validation.js';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const crdDir = join(repo, 'crds');
const crds = readdirSync(crdDir)
  .filter((f) => f.endsWith('.yaml'))
  .map((file) => ({ file, crd: readCrd(join(crdDir, file)) }));

interface Case {
  name: string;
  expect: string | undefined;
  old: unknown;
  object: unknown;
}

function readCases(kind: string): Case[] {
  const dir = join(crdDir, 'testdata', kind.toLowerCase());
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((file) => {
      const text = readFileSync(join(dir, file), 'utf8');
      const docs = parseAllDocuments(text).map((d) => d.toJS() as unknown);
      const expect = /^# expect: (.+)$/m.exec(text)?.[1];
      const [first, second] = docs;
      return second === undefined
        ? { name: file, expect, old: undefined, object: first }
        : { name: file, expect, old: first, object: second };
    });
}

// Every node typed, no properties beside additionalProperties, metadata left to the server,
// and every list/string/map bounded so the API server's CEL cost estimate stays in budget
// (apiVersion and kind are checked by the server itself).
function structuralProblems(node: SchemaNode, path: string): string[] {
  const problems: string[] = [];
  if (!node.type && !node['x-kubernetes-int-or-string'] && !node['x-kubernetes-preserve-unknown-fields']) problems.push(`${path}: no type`);
  if (node.properties && node.additionalProperties !== undefined) problems.push(`${path}: properties and additionalProperties together`);
  if (node.type === 'array' && (node.items === undefined || node.maxItems === undefined))
    problems.push(`${path}: array without items or maxItems`);
  const serverField = path === '.apiVersion' || path === '.kind';
  if (node.type === 'string' && node.maxLength === undefined && node.enum === undefined && !serverField)
    problems.push(`${path}: string without maxLength or enum`);
  if (typeof node.additionalProperties === 'object' && node.maxProperties === undefined)
    problems.push(`${path}: map without maxProperties`);
  for (const [name, child] of Object.entries(node.properties ?? {})) problems.push(...structuralProblems(child, `${path}.${name}`));
  if (node.items) problems.push(...structuralProblems(node.items, `${path}[*]`));
  if (typeof node.additionalProperties === 'object') problems.push(...structuralProblems(node.additionalProperties, `${path}{*}`));
  return problems;
}

// Follows a printer column's JSONPath (`.a.b`, `.list[*]`, `.list[?(@.k=="v")].field`) through
// the schema; metadata is the server's ObjectMeta and is taken on trust.
function schemaAt(root: SchemaNode, jsonPath: string): SchemaNode | 'metadata' | undefined {
  const steps = jsonPath
    .replace(/\[[^\]]*\]/g, '.[]')
    .split('.')
    .filter(Boolean);
  let node: SchemaNode | undefined = root;
  for (const step of steps) {
    if (node === undefined) return undefined;
    if (node === root && step === 'metadata') return 'metadata';
    node = step === '[]' ? node.items : node.properties?.[step];
  }
  return node;
}

function openApi(crd: Crd): SchemaNode {
  const version = crd.spec.versions[0];
  assert.ok(version, `${crd.metadata.name} has a version`);
  return version.schema.openAPIV3Schema;
}

for (const { file, crd } of crds) {
  describe(`CRD ${file}`, () => {
    it('is one served and stored v1alpha1 version of gateway.svc.dev with a status subresource, short name and category', () => {
      assert.equal(crd.spec.group, 'gateway.svc.dev', 'group');
      assert.equal(crd.metadata.name, `${crd.spec.names.plural}.${crd.spec.group}`, 'name is <plural>.<group>');
      assert.equal(crd.spec.versions.length, 1, 'one version');
      const [version] = crd.spec.versions;
      assert.ok(version?.name === 'v1alpha1' && version.served && version.storage, 'v1alpha1 served and stored');
      assert.deepEqual(version.subresources?.status, {}, 'status subresource');
      assert.equal(crd.spec.names.shortNames?.length, 1, 'one short name');
      assert.deepEqual(crd.spec.names.categories, ['svcgateway'], 'category');
    });

    it('has a structural schema with bounded lists, strings and maps', () => {
      const schema = openApi(crd);
      assert.deepEqual(structuralProblems(schema, ''), [], 'structural problems');
      assert.deepEqual(schema.properties?.metadata, { type: 'object' }, 'metadata is left to the API server');
    });

    it('has printer columns whose JSONPaths exist in the schema', () => {
      const columns = crd.spec.versions[0]?.additionalPrinterColumns ?? [];
      assert.ok(columns.some((c) => c.name === 'Ready') && columns.some((c) => c.name === 'Age'), 'Ready and Age columns');
      for (const column of columns) {
        assert.ok(schemaAt(openApi(crd), column.jsonPath), `column ${column.name}: ${column.jsonPath} is in the schema`);
      }
    });

    it('has CEL rules that parse, each with a message and a bad example that breaks it', () => {
      const kind = crd.spec.names.kind;
      const expectations = readCases(kind).map((c) => c.expect ?? '');
      for (const { path, rule } of celRules(openApi(crd))) {
        assert.doesNotThrow(() => parseCel(rule.rule), `rule at "${path}" parses: ${rule.rule}`);
        assert.ok(rule.message, `rule at "${path}" has a message`);
        assert.ok(
          expectations.some((e) => rule.message !== undefined && e.includes(rule.message.slice(0, 40))),
          `some crds/testdata/${kind.toLowerCase()} case expects "${rule.message}"`,
        );
      }
    });

    const validate = crdValidator(crd);
    for (const example of readCases(crd.spec.names.kind)) {
      it(`testdata ${example.name}`, () => {
        const kinds = [example.object, example.old].filter(Boolean).map((o) => (o as { kind?: string }).kind);
        assert.ok(
          kinds.every((k) => k === crd.spec.names.kind),
          `${example.name} holds ${crd.spec.names.kind} objects`,
        );
        const violations = validate(example.object, example.old).map(describeViolation);
        if (example.name.startsWith('good-')) {
          assert.deepEqual(violations, [], `${example.name} is accepted`);
        } else {
          assert.ok(example.name.startsWith('bad-'), `${example.name} is named good-* or bad-*`);
          assert.ok(example.expect, `${example.name} has an "# expect:" line`);
          assert.equal(violations.length, 1, `${example.name} breaks exactly one rule, got: ${violations.join(' | ')}`);
          assert.ok(violations[0]?.includes(example.expect), `${example.name}: "${violations[0]}" includes "${example.expect}"`);
        }
      });
    }
  });
}

describe('CRD validator', () => {
  it('applies schema defaults before CEL rules, as the API server does', () => {
    const crd = crds.find((c) => c.crd.spec.names.kind === 'ManagedKey')?.crd;
    assert.ok(crd, 'ManagedKey CRD present');
    const object = {
      apiVersion: 'gateway.svc.dev/v1alpha1',
      kind: 'ManagedKey',
      metadata: { name: 'k' },
      spec: { budget: { limitUsd: '1', windowDays: 30 } },
    };
    // period defaults to Monthly, so windowDays is refused by the rule that reads period.
    assert.deepEqual(
      crdValidator(crd)(object).map(describeViolation),
      ['spec.budget.windowDays: cel: windowDays is only allowed when period is Rolling'],
      'default applied',
    );
  });
});

// The operator applies a bundled CRD only over an equal or older schema revision
// (operator/src/crd/decide.ts), so a schema change shipped without raising the revision would
// never reach clusters that run the previous release. Each revision's spec is fingerprinted here:
// changing a spec fails this test until the revision annotation is raised and the new
// fingerprint recorded.
const specFingerprints: Record<string, { revision: string; sha256: string }> = {
  'managedkeys.gateway.svc.dev': { revision: '1', sha256: 'c8608da6b4a309f994d9cd103cfdcd0d2baeefec6f4cc85171b2d58e903d72d9' },
  'regionpolicies.gateway.svc.dev': { revision: '1', sha256: 'b90fd59835c18ea390e9494338174fb74575675ef4802fae5af074509e8d6349' },
};

describe('CRD schema revisions', () => {
  for (const { file, crd } of crds) {
    it(`${file}: a spec change comes with a raised gateway.svc.dev/schema-revision`, () => {
      const annotations = (crd.metadata as { annotations?: Record<string, string> }).annotations ?? {};
      const recorded = specFingerprints[crd.metadata.name];
      assert.ok(recorded, `${crd.metadata.name} has a recorded fingerprint`);
      const sha256 = createHash('sha256').update(JSON.stringify(crd.spec)).digest('hex');
      assert.deepEqual(
        { revision: annotations['gateway.svc.dev/schema-revision'], sha256 },
        recorded,
        'the spec changed: raise the schema revision in the CRD and record the new fingerprint here',
      );
    });
  }
});
