import { crdValidator, describeViolation, type Crd, type Violation } from '../crd-validation.js';
import { KubeStatusError } from './kube-status.js';
import type { KubeObject, ObjectStore } from './object-store.js';
import { crdType, type ResourceType } from './resource-types.js';

/**
 * The status the API server maintains on a CRD: names accepted, Established, and
 * `storedVersions`, which only grows (a version stays listed until a storage migration removes
 * it by hand), plus the current storage version.
 */
export function crdStatusAfterWrite(crd: KubeObject): Record<string, unknown> {
  const spec = (crd as unknown as Crd).spec;
  const previous = ((crd.status as { storedVersions?: string[] } | undefined)?.storedVersions ?? []).slice();
  const storage = spec.versions.find((v) => v.storage)?.name;
  if (storage && !previous.includes(storage)) previous.push(storage);
  const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
  // A condition that holds keeps its transition time (as on the API server), so a write that
  // changes nothing leaves the status, and the resourceVersion, as they were.
  const before =
    (crd.status as { conditions?: { type: string; status: string; lastTransitionTime: string }[] } | undefined)?.conditions ?? [];
  const condition = (type: string, reason: string) => ({
    type,
    status: 'True',
    reason,
    message: '',
    lastTransitionTime: before.find((c) => c.type === type && c.status === 'True')?.lastTransitionTime ?? now,
  });
  return {
    acceptedNames: spec.names,
    conditions: [condition('NamesAccepted', 'NoConflicts'), condition('Established', 'InitialNamesAccepted')],
    storedVersions: previous,
  };
}

/**
 * Validates custom objects against the schema of their CRD when one is stored in the fake server
 * (a test that applies CRDs gets the API server's refusals; others, with no CRD stored, write
 * freely as before). One validator per CRD resourceVersion and served version.
 */
export class CrdSchemas {
  private readonly validators = new Map<string, (object: unknown, old?: unknown) => Violation[]>();

  constructor(private readonly store: ObjectStore) {}

  check(type: ResourceType, object: KubeObject, old: KubeObject | undefined): void {
    const crdName = `${type.plural}.${type.group}`;
    if (!this.store.has(crdType, undefined, crdName)) return;
    const crd = this.store.get(crdType, undefined, crdName);
    const violations = this.validatorFor(crd, type.version)(object, old);
    if (violations.length === 0) return;
    throw new KubeStatusError(
      422,
      'Invalid',
      `${type.kind}.${type.group} "${object.metadata.name ?? ''}" is invalid: ${violations.map(describeViolation).join('; ')}`,
    );
  }

  private validatorFor(crd: KubeObject, version: string): (object: unknown, old?: unknown) => Violation[] {
    const key = `${crd.metadata.name}@${crd.metadata.resourceVersion}/${version}`;
    let validator = this.validators.get(key);
    if (!validator) {
      const definition = crd as unknown as Crd;
      const served = definition.spec.versions.find((v) => v.name === version && v.served);
      if (!served) throw new KubeStatusError(404, 'NotFound', `version ${version} of ${crd.metadata.name} is not served`);
      validator = crdValidator({ ...definition, spec: { ...definition.spec, versions: [served] } });
      this.validators.set(key, validator);
    }
    return validator;
  }
}
