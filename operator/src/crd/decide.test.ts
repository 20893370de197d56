import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import { decideCrdChange, schemaRevisionAnnotation, schemaRevisionOf, type CrdSnapshot } from './decide.js';

const crd = (revision: number | undefined, versions: string[], storedVersions?: string[]): CrdSnapshot => ({
  metadata: {
    name: 'managedkeys.gateway.svc.dev',
    ...(revision !== undefined && { annotations: { [schemaRevisionAnnotation]: String(revision) } }),
  },
  spec: { versions: versions.map((name, i) => ({ name, storage: i === 0 })) },
  ...(storedVersions && { status: { storedVersions } }),
});

describe('decideCrdChange', () => {
  it('applies an absent CRD, an older revision and the same revision', () => {
    assert.deepEqual(decideCrdChange(crd(2, ['v1alpha1']), undefined), { action: 'apply', reason: 'absent' });
    assert.deepEqual(decideCrdChange(crd(2, ['v1alpha1']), crd(1, ['v1alpha1'], ['v1alpha1'])), { action: 'apply', reason: 'older' });
    assert.deepEqual(decideCrdChange(crd(2, ['v1alpha1']), crd(2, ['v1alpha1'], ['v1alpha1'])), { action: 'apply', reason: 'same' });
  });

  it('treats a CRD without the annotation as revision 0 (installed before revisions existed)', () => {
    assert.equal(schemaRevisionOf(crd(undefined, ['v1alpha1'])), 0);
    assert.equal(schemaRevisionOf({ metadata: { annotations: { [schemaRevisionAnnotation]: 'x' } } }), 0);
    assert.deepEqual(decideCrdChange(crd(1, ['v1alpha1']), crd(undefined, ['v1alpha1'])), { action: 'apply', reason: 'older' });
  });

  it('never downgrades a newer schema', () => {
    assert.deepEqual(decideCrdChange(crd(1, ['v1alpha1']), crd(3, ['v1beta1', 'v1alpha1'], ['v1alpha1'])), {
      action: 'keep',
      reason: 'newer',
      clusterRevision: 3,
    });
  });

  it('refuses to drop a version objects are stored in', () => {
    assert.deepEqual(decideCrdChange(crd(5, ['v1beta1']), crd(4, ['v1beta1', 'v1alpha1'], ['v1alpha1', 'v1beta1'])), {
      action: 'refuse',
      reason: 'drops-stored-version',
      versions: ['v1alpha1'],
    });
    // Once the storage migration removed v1alpha1 from storedVersions, the version may go.
    assert.equal(decideCrdChange(crd(5, ['v1beta1']), crd(4, ['v1beta1', 'v1alpha1'], ['v1beta1'])).action, 'apply');
  });
});
