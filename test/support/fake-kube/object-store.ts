import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { KubeStatusError, notFound, staleConflict } from './kube-status.js';
import { apiVersionOf, typeId, type ResourceType } from './resource-types.js';

/** An owner reference as the API carries it. */
export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

/** Object metadata (the fields the fake server reads or maintains). */
export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: OwnerReference[];
  [field: string]: unknown;
}

/** Any API object. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  [field: string]: unknown;
}

/** A change, as a watch stream reports it. */
export interface StoredEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  resourceVersion: number;
  typeId: string;
  object: KubeObject;
}

/** Which part of an object a write addresses. */
export type WriteTarget = 'main' | 'status';

const objectKey = (namespace: string | undefined, name: string) => `${namespace ?? ''}/${name}`;
const timestamp = () => new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');

/** Everything but metadata and status: what `metadata.generation` counts changes of. */
function specPart(object: KubeObject): Record<string, unknown> {
  const { metadata: _m, status: _s, apiVersion: _a, kind: _k, ...rest } = object;
  return rest;
}

/** Secrets accept `stringData` on write and store it base64-encoded under `data`, as the API does. */
function normalizeSecret(object: KubeObject): KubeObject {
  const stringData = object.stringData as Record<string, string> | undefined;
  if (!stringData) return object;
  const { stringData: _drop, ...rest } = object;
  const data = { ...((rest.data as Record<string, string> | undefined) ?? {}) };
  for (const [k, v] of Object.entries(stringData)) data[k] = Buffer.from(v, 'utf8').toString('base64');
  return { ...rest, data };
}

/**
 * The fake API server's storage: like etcd, one resourceVersion counter across all kinds and a
 * history of changes that watches replay from, until `compact()` discards it (after which a
 * watch from an older version gets 410 Gone). Write rules follow the real server: generation
 * counts spec changes only, the status subresource splits status from the rest, stale
 * resourceVersions conflict, finalizers defer deletion and owner references cascade it.
 */
export class ObjectStore {
  private lastRv = 0;
  private compactedRv = 0;
  private readonly objects = new Map<string, Map<string, KubeObject>>();
  private history: StoredEvent[] = [];
  private readonly listeners = new Set<(event: StoredEvent) => void>();
  private readonly types = new Map<string, ResourceType>();

  constructor(types: readonly ResourceType[]) {
    for (const type of types) {
      this.types.set(typeId(type), type);
      this.objects.set(typeId(type), new Map());
    }
  }

  /** The current resourceVersion (of the newest change). */
  get resourceVersion(): number {
    return this.lastRv;
  }

  /** Objects of a kind (in one namespace, or all), and the resourceVersion the list is consistent at. */
  list(type: ResourceType, namespace: string | undefined): { items: KubeObject[]; resourceVersion: number } {
    const items = [...this.bucket(type).values()].filter((o) => namespace === undefined || o.metadata.namespace === namespace);
    items.sort((a, b) =>
      objectKey(a.metadata.namespace, a.metadata.name!).localeCompare(objectKey(b.metadata.namespace, b.metadata.name!)),
    );
    return { items: structuredClone(items), resourceVersion: this.lastRv };
  }

  /** True when the object exists. */
  has(type: ResourceType, namespace: string | undefined, name: string): boolean {
    return this.bucket(type).has(objectKey(type.namespaced ? namespace : undefined, name));
  }

  /** One object, or 404. */
  get(type: ResourceType, namespace: string | undefined, name: string): KubeObject {
    return structuredClone(this.require(type, namespace, name));
  }

  /** Creates an object; 409 AlreadyExists when the name is taken. */
  create(type: ResourceType, namespace: string | undefined, body: KubeObject): KubeObject {
    const metadata = { ...(body.metadata ?? {}) };
    if (!metadata.name && metadata.generateName) metadata.name = `${metadata.generateName}${randomUUID().slice(0, 5)}`;
    if (!metadata.name)
      throw new KubeStatusError(422, 'Invalid', `${type.kind} is invalid: metadata.name: Required value: name or generateName is required`);
    if (type.namespaced && body.metadata?.namespace && body.metadata.namespace !== namespace) {
      throw new KubeStatusError(400, 'BadRequest', 'the namespace of the provided object does not match the namespace sent on the request');
    }
    if (this.bucket(type).has(objectKey(type.namespaced ? namespace : undefined, metadata.name))) {
      throw new KubeStatusError(409, 'AlreadyExists', `${type.plural} "${metadata.name}" already exists`, {
        name: metadata.name,
        kind: type.plural,
        group: type.group,
      });
    }
    refuseInvalidLabels(type, metadata.labels);
    const rv = this.nextRv();
    const { deletionTimestamp: _d, resourceVersion: _r, ...cleanMeta } = metadata;
    let object: KubeObject = {
      ...normalizeSecret(structuredClone(body)),
      apiVersion: apiVersionOf(type),
      kind: type.kind,
      metadata: {
        ...cleanMeta,
        ...(type.namespaced ? { namespace } : { namespace: undefined }),
        uid: randomUUID(),
        resourceVersion: String(rv),
        generation: 1,
        creationTimestamp: timestamp(),
      },
    };
    if (!type.namespaced) delete object.metadata.namespace;
    // With a status subresource, status can only be written through /status.
    if (type.statusSubresource) {
      const { status: _status, ...rest } = object;
      object = rest as KubeObject;
    }
    this.put(type, object, 'ADDED', rv);
    return structuredClone(object);
  }

  /**
   * Writes a new version computed from the current one (a replace or a patch). A resourceVersion
   * in the result that differs from the stored one is a stale write: 409. A write that changes
   * nothing keeps the version and emits no event, as on the real server.
   */
  update(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    target: WriteTarget,
    compute: (current: KubeObject) => KubeObject,
  ): KubeObject {
    const current = this.require(type, namespace, name);
    const candidate = compute(structuredClone(current));
    refuseInvalidLabels(type, candidate.metadata?.labels);
    const wantedRv = candidate.metadata?.resourceVersion;
    if (wantedRv !== undefined && wantedRv !== '' && wantedRv !== current.metadata.resourceVersion)
      throw staleConflict(type.plural, type.group, name);
    if ((candidate.metadata?.name ?? name) !== name)
      throw new KubeStatusError(400, 'BadRequest', 'the name of the object does not match the name on the URL');
    const next = target === 'status' ? this.statusWrite(current, candidate) : this.mainWrite(type, current, normalizeSecret(candidate));
    const unchanged = isDeepStrictEqual(
      { ...next, metadata: { ...next.metadata, resourceVersion: '' } },
      { ...current, metadata: { ...current.metadata, resourceVersion: '' } },
    );
    if (unchanged) return structuredClone(current);
    const rv = this.nextRv();
    next.metadata.resourceVersion = String(rv);
    if (next.metadata.deletionTimestamp && (next.metadata.finalizers ?? []).length === 0) {
      this.remove(type, next, rv);
      return structuredClone(next);
    }
    this.put(type, next, 'MODIFIED', rv);
    return structuredClone(next);
  }

  /**
   * Deletes an object. With finalizers it is only marked (deletionTimestamp) and goes when the
   * last finalizer is removed. Dependents (owner references to it) are deleted after it unless
   * the propagation policy is Orphan. Returns the object and whether it is gone.
   */
  delete(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    options: { propagationPolicy?: string; preconditionRv?: string } = {},
  ): { object: KubeObject; removed: boolean } {
    const current = this.require(type, namespace, name);
    if (options.preconditionRv && options.preconditionRv !== current.metadata.resourceVersion)
      throw staleConflict(type.plural, type.group, name);
    if ((current.metadata.finalizers ?? []).length > 0) {
      if (current.metadata.deletionTimestamp) return { object: structuredClone(current), removed: false };
      const rv = this.nextRv();
      const marked: KubeObject = {
        ...structuredClone(current),
        metadata: {
          ...structuredClone(current.metadata),
          deletionTimestamp: timestamp(),
          deletionGracePeriodSeconds: 0,
          resourceVersion: String(rv),
        },
      };
      this.put(type, marked, 'MODIFIED', rv);
      return { object: structuredClone(marked), removed: false };
    }
    const rv = this.nextRv();
    const gone = { ...structuredClone(current), metadata: { ...structuredClone(current.metadata), resourceVersion: String(rv) } };
    this.remove(type, gone, rv, options.propagationPolicy === 'Orphan');
    return { object: structuredClone(gone), removed: true };
  }

  /** Changes after `fromRv` for a watch to replay, or 'expired' when compaction discarded some. */
  eventsSince(fromRv: number): StoredEvent[] | 'expired' {
    if (fromRv < this.compactedRv) return 'expired';
    return this.history.filter((e) => e.resourceVersion > fromRv);
  }

  /** Calls `listener` for every change from now on; returns the unsubscribe function. */
  subscribe(listener: (event: StoredEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Discards the change history: watches from any version before now get 410 Gone. */
  compact(): void {
    this.compactedRv = this.lastRv;
    this.history = [];
  }

  /** The registered kind for a group and plural, if any. */
  typeFor(group: string, plural: string): ResourceType | undefined {
    return this.types.get(typeId({ group, plural }));
  }

  /** Every registered kind (for discovery). */
  allTypes(): ResourceType[] {
    return [...this.types.values()];
  }

  private statusWrite(current: KubeObject, candidate: KubeObject): KubeObject {
    const next = structuredClone(current);
    if (candidate.status === undefined) delete next.status;
    else next.status = structuredClone(candidate.status);
    return next;
  }

  private mainWrite(type: ResourceType, current: KubeObject, candidate: KubeObject): KubeObject {
    const meta = candidate.metadata ?? {};
    const next: KubeObject = {
      ...structuredClone(candidate),
      apiVersion: apiVersionOf(type),
      kind: type.kind,
      metadata: {
        ...structuredClone(meta),
        // Fields the server owns: a client cannot change them through a write.
        name: current.metadata.name,
        uid: current.metadata.uid,
        resourceVersion: current.metadata.resourceVersion,
        creationTimestamp: current.metadata.creationTimestamp,
        generation: current.metadata.generation,
        deletionTimestamp: current.metadata.deletionTimestamp,
        deletionGracePeriodSeconds: current.metadata.deletionGracePeriodSeconds,
      },
    };
    if (type.namespaced) next.metadata.namespace = current.metadata.namespace;
    for (const [k, v] of Object.entries(next.metadata)) if (v === undefined) delete next.metadata[k];
    if (type.statusSubresource) {
      if (current.status === undefined) delete next.status;
      else next.status = structuredClone(current.status);
    }
    if (!isDeepStrictEqual(specPart(next), specPart(current))) next.metadata.generation = (current.metadata.generation ?? 0) + 1;
    return next;
  }

  private remove(type: ResourceType, object: KubeObject, rv: number, orphanDependents = false): void {
    this.bucket(type).delete(objectKey(object.metadata.namespace, object.metadata.name!));
    this.record({ type: 'DELETED', resourceVersion: rv, typeId: typeId(type), object });
    this.collectDependents(object.metadata.uid!, orphanDependents);
  }

  /**
   * Owner-reference garbage collection: a dependent whose owners are all gone is deleted (its
   * own finalizers still apply); one that keeps another owner only loses the reference.
   */
  private collectDependents(ownerUid: string, orphan: boolean): void {
    for (const [id, bucket] of this.objects) {
      const type = this.types.get(id)!;
      for (const dependent of [...bucket.values()]) {
        const refs = dependent.metadata.ownerReferences ?? [];
        if (!refs.some((r) => r.uid === ownerUid)) continue;
        const remaining = refs.filter((r) => r.uid !== ownerUid && this.exists(r.uid));
        const { name, namespace } = dependent.metadata;
        if (orphan || remaining.length > 0) {
          this.update(type, namespace, name!, 'main', (d) => ({ ...d, metadata: { ...d.metadata, ownerReferences: remaining } }));
        } else if (!dependent.metadata.deletionTimestamp) {
          this.delete(type, namespace, name!);
        }
      }
    }
  }

  private exists(uid: string): boolean {
    for (const bucket of this.objects.values()) for (const o of bucket.values()) if (o.metadata.uid === uid) return true;
    return false;
  }

  private put(type: ResourceType, object: KubeObject, eventType: 'ADDED' | 'MODIFIED', rv: number): void {
    this.bucket(type).set(objectKey(object.metadata.namespace, object.metadata.name!), object);
    this.record({ type: eventType, resourceVersion: rv, typeId: typeId(type), object });
  }

  private record(event: StoredEvent): void {
    const frozen = { ...event, object: structuredClone(event.object) };
    this.history.push(frozen);
    for (const listener of this.listeners) listener(frozen);
  }

  private nextRv(): number {
    this.lastRv += 1;
    return this.lastRv;
  }

  private bucket(type: ResourceType): Map<string, KubeObject> {
    return this.objects.get(typeId(type))!;
  }

  private require(type: ResourceType, namespace: string | undefined, name: string): KubeObject {
    const found = this.bucket(type).get(objectKey(type.namespaced ? namespace : undefined, name));
    if (!found) throw notFound(type.plural, type.group, name);
    return found;
  }
}

/** A label value as the API server validates it: empty, or at most 63 alphanumerics, `-`, `_`, `.` starting and ending alphanumeric. */
const labelValue = /^(|[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)$/;

/** Refuses label values the real API server refuses (422 Invalid), so a test meets what a cluster would say. */
function refuseInvalidLabels(type: ResourceType, labels: Record<string, string> | undefined): void {
  for (const [name, value] of Object.entries(labels ?? {})) {
    if (!labelValue.test(value))
      throw new KubeStatusError(
        422,
        'Invalid',
        `${type.kind} is invalid: metadata.labels: Invalid value: "${value}": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (${name}; at most 63 characters)`,
      );
  }
}
