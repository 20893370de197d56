// Whether the operator may apply its bundled CustomResourceDefinition over the one in the
// cluster. Pure: the rules are tested without an API server (decide.test.ts).

/** Annotation carrying a CRD's schema revision: a whole number raised with every schema change. */
export const schemaRevisionAnnotation = 'gateway.svc.dev/schema-revision';

/** The parts of a CRD this decision reads. */
export interface CrdSnapshot {
  metadata?: { name?: string; annotations?: Record<string, string> };
  spec?: { versions?: Array<{ name: string; storage?: boolean }> };
  status?: { storedVersions?: string[] };
}

/** What to do with one bundled CRD. */
export type CrdDecision =
  | { action: 'apply'; reason: 'absent' | 'older' | 'same' }
  /** The cluster runs a newer schema (another release's operator applied it): left alone, never downgraded. */
  | { action: 'keep'; reason: 'newer'; clusterRevision: number }
  /** Applying would stop a version that objects are still stored in: refused, the cluster keeps its schema. */
  | { action: 'refuse'; reason: 'drops-stored-version'; versions: string[] };

/** The schema revision a CRD declares; a CRD without the annotation predates revisions (0). */
export function schemaRevisionOf(crd: CrdSnapshot): number {
  const raw = crd.metadata?.annotations?.[schemaRevisionAnnotation];
  if (raw === undefined) return 0;
  const revision = Number(raw);
  return Number.isSafeInteger(revision) && revision >= 0 ? revision : 0;
}

/**
 * Apply when the CRD is absent or the cluster's revision is not newer than ours (the same
 * revision is applied too: server-side apply of an unchanged object changes nothing, and it
 * repairs a field someone edited by hand). Never when the cluster's revision is newer (an old
 * replica during a rolling upgrade must not undo the new one), nor when a version listed in
 * `status.storedVersions` is missing from ours (objects stored in it would become unreadable;
 * dropping a version is a storage migration, docs/deploy.md).
 */
export function decideCrdChange(bundled: CrdSnapshot, existing: CrdSnapshot | undefined): CrdDecision {
  if (!existing) return { action: 'apply', reason: 'absent' };
  const ours = schemaRevisionOf(bundled);
  const theirs = schemaRevisionOf(existing);
  if (theirs > ours) return { action: 'keep', reason: 'newer', clusterRevision: theirs };
  const offered = new Set((bundled.spec?.versions ?? []).map((v) => v.name));
  const dropped = (existing.status?.storedVersions ?? []).filter((v) => !offered.has(v));
  if (dropped.length > 0) return { action: 'refuse', reason: 'drops-stored-version', versions: dropped };
  return { action: 'apply', reason: theirs === ours ? 'same' : 'older' };
}
