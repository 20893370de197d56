/** What a REST path under /api/v1 or /apis/<group>/<version> addresses. */
export type RequestPath =
  | { kind: 'root'; path: '/api' | '/apis' | '/version' }
  | { kind: 'groupVersion'; group: string; version: string }
  | {
      kind: 'resource';
      group: string;
      version: string;
      plural: string;
      /** Set for a namespaced request (`/namespaces/<ns>/<plural>...`). */
      namespace: string | undefined;
      /** Set for an item request; absent for the collection. */
      name: string | undefined;
      subresource: string | undefined;
    };

/**
 * Parses a Kubernetes REST path. `/api/v1/namespaces/<x>` is ambiguous between the Namespace
 * object `<x>` and a namespaced collection; as on the real server, two segments after
 * `namespaces` name a namespaced collection, and `status` after a namespace name is the
 * Namespace's status subresource.
 */
export function parseRequestPath(pathname: string): RequestPath | undefined {
  if (pathname === '/api' || pathname === '/apis' || pathname === '/version') return { kind: 'root', path: pathname };
  const segments = pathname
    .split('/')
    .filter((s) => s !== '')
    .map(decodeURIComponent);
  let group: string;
  let version: string;
  let rest: string[];
  if (segments[0] === 'api' && segments.length >= 2) {
    group = '';
    version = segments[1]!;
    rest = segments.slice(2);
  } else if (segments[0] === 'apis' && segments.length >= 3) {
    group = segments[1]!;
    version = segments[2]!;
    rest = segments.slice(3);
  } else {
    return undefined;
  }
  if (rest.length === 0) return { kind: 'groupVersion', group, version };
  let namespace: string | undefined;
  if (rest[0] === 'namespaces' && rest.length >= 3 && rest[2] !== 'status') {
    namespace = rest[1];
    rest = rest.slice(2);
  }
  const [plural, name, subresource, ...extra] = rest;
  if (!plural || extra.length > 0) return undefined;
  return { kind: 'resource', group, version, plural, namespace, name, subresource };
}
