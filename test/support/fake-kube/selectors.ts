import { KubeStatusError } from './kube-status.js';
import type { KubeObject } from './object-store.js';

type Requirement = { key: string; op: 'eq' | 'neq' | 'exists' | 'absent'; value?: string };

/** An object filter built from `labelSelector` and `fieldSelector` query parameters. */
export type ObjectFilter = (object: KubeObject) => boolean;

/** Equality-based label selectors (`a=b`, `a==b`, `a!=b`, `a`, `!a`), comma-separated. */
function parseLabelSelector(selector: string): Requirement[] {
  return selector
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '')
    .map((part): Requirement => {
      const neq = part.split('!=');
      if (neq.length === 2) return { key: neq[0]!.trim(), op: 'neq', value: neq[1]!.trim() };
      const eq = part.split(/==?/);
      if (eq.length === 2) return { key: eq[0]!.trim(), op: 'eq', value: eq[1]!.trim() };
      if (part.startsWith('!')) return { key: part.slice(1), op: 'absent' };
      if (/^[\w./-]+$/.test(part)) return { key: part, op: 'exists' };
      // Set-based selectors (`in`, `notin`) are not needed by the project; refuse rather than ignore.
      throw new KubeStatusError(400, 'BadRequest', `unable to parse requirement: ${part}`);
    });
}

function matches(values: Record<string, string | undefined>, requirements: readonly Requirement[]): boolean {
  return requirements.every((r) => {
    const actual = values[r.key];
    switch (r.op) {
      case 'eq':
        return actual === r.value;
      case 'neq':
        return actual !== r.value;
      case 'exists':
        return actual !== undefined;
      case 'absent':
        return actual === undefined;
      default: {
        const unreachable: never = r.op;
        throw new Error(`unknown selector operator ${String(unreachable)}`);
      }
    }
  });
}

/** The filter for a request's selectors; every object passes when neither is given. */
export function objectFilter(labelSelector: string | null, fieldSelector: string | null): ObjectFilter {
  const labels = labelSelector ? parseLabelSelector(labelSelector) : [];
  const fields = fieldSelector ? parseLabelSelector(fieldSelector) : [];
  for (const field of fields) {
    if (field.key !== 'metadata.name' && field.key !== 'metadata.namespace') {
      throw new KubeStatusError(400, 'BadRequest', `field label not supported: ${field.key}`);
    }
  }
  return (object) =>
    matches(object.metadata.labels ?? {}, labels) &&
    matches({ 'metadata.name': object.metadata.name, 'metadata.namespace': object.metadata.namespace }, fields);
}
