// The sample custom resources that deploy/kind/up.sh applies are valid against the CRDs and
// name only models, regions and suppliers of the chart's default catalogue, so on a fresh kind
// cluster every sample becomes Ready.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml, parseAllDocuments } from 'yaml';
import { crdValidator, describeViolation, readCrd } from '../support/crd-validation.js';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const samplesDir = join(repo, 'deploy', 'samples');

interface Sample {
  file: string;
  object: { apiVersion: string; kind: string; metadata: { name: string }; spec?: Record<string, unknown> };
}
const samples: Sample[] = readdirSync(samplesDir)
  .filter((f) => f.endsWith('.yaml'))
  .sort()
  .flatMap((file) =>
    parseAllDocuments(readFileSync(join(samplesDir, file), 'utf8')).map((d) => ({ file, object: d.toJS() as Sample['object'] })),
  );

const validators = new Map<string, ReturnType<typeof crdValidator>>(
  readdirSync(join(repo, 'crds'))
    .filter((f) => f.endsWith('.yaml'))
    .map((f) => readCrd(join(repo, 'crds', f)))
    .map((crd) => [`${crd.spec.group}/${crd.spec.versions[0]?.name}/${crd.spec.names.kind}`, crdValidator(crd)]),
);

interface CatalogueSupplier {
  name: string;
  region: string;
  models: Array<{ id: string }>;
}
const defaultCatalogue = (
  parseYaml(readFileSync(join(repo, 'charts', 'svc-gateway', 'values.yaml'), 'utf8')) as { catalogue: { suppliers: CatalogueSupplier[] } }
).catalogue.suppliers;

describe('deploy/samples', () => {
  it('holds a ManagedKey and a RegionPolicy at least', () => {
    const kinds = new Set(samples.map((s) => s.object.kind));
    assert.ok(kinds.has('ManagedKey') && kinds.has('RegionPolicy'), `kinds: ${[...kinds].join(', ')}`);
  });

  for (const { file, object } of samples.filter((s) => s.object.apiVersion.startsWith('gateway.svc.dev/'))) {
    it(`${file}: ${object.kind} ${object.metadata.name} is valid and fits the default catalogue`, () => {
      const validate = validators.get(`${object.apiVersion}/${object.kind}`);
      assert.ok(validate, `a CRD serves ${object.apiVersion} ${object.kind}`);
      assert.deepEqual(validate(object).map(describeViolation), [], `${file} is accepted`);
      const spec = object.spec ?? {};
      const models = new Set(defaultCatalogue.flatMap((s) => s.models.map((m) => m.id)));
      const regions = new Set(defaultCatalogue.map((s) => s.region));
      for (const model of (spec.allowedModels as string[] | undefined) ?? [])
        assert.ok(models.has(model) || model === 'auto', `model ${model} is in the default catalogue`);
      for (const region of (spec.allowedRegions as string[] | undefined) ?? [])
        assert.ok(regions.has(region), `region ${region} is in the default catalogue`);
      for (const entry of (spec.regions as Array<{ region: string; allowedSuppliers: string[] }> | undefined) ?? []) {
        for (const name of entry.allowedSuppliers) {
          const supplier = defaultCatalogue.find((s) => s.name === name);
          assert.equal(supplier?.region, entry.region, `supplier ${name} is in the default catalogue, in ${entry.region}`);
        }
      }
    });
  }
});
