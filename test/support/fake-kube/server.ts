import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { coreVersions, groupList, resourceList } from './discovery.js';
import { KubeStatusError } from './kube-status.js';
import { ObjectStore, type KubeObject, type StoredEvent } from './object-store.js';
import { crdStatusAfterWrite, CrdSchemas } from './crds.js';
import { applyPatch, isApply } from './patch.js';
import { parseRequestPath } from './request-path.js';
import { builtInTypes, crdType, gatewayCustomTypes, typeId, type ResourceType } from './resource-types.js';
import { objectFilter } from './selectors.js';

/** One open watch stream. */
interface OpenWatch {
  response: ServerResponse;
  bookmarks: boolean;
  close(): void;
}

/** Options of the fake API server. */
export interface FakeKubeOptions {
  /** Kinds served besides the built-in ones (default: the project's ManagedKey and RegionPolicy). */
  customTypes?: readonly ResourceType[];
}

/**
 * An in-process Kubernetes API server on loopback, speaking the REST protocol closely enough
 * for `@kubernetes/client-node` to run unchanged: discovery, list, watch (from a
 * resourceVersion, with 410 Gone after `compact()`), get/create/replace/patch/delete, status
 * subresources, generations, optimistic concurrency, finalizers and owner-reference garbage
 * collection, server-side apply (one field manager) and CRDs: once a custom kind's CRD is stored,
 * writes of that kind are validated against its schema. Faults can be injected: dropped watches
 * and failing requests.
 */
export class FakeKubeServer {
  /** The objects, for tests that inspect or seed state without going through HTTP. */
  readonly store: ObjectStore;
  private readonly schemas: CrdSchemas;
  private readonly server: Server;
  private readonly watches = new Set<OpenWatch>();
  private readonly failures = new Map<string, { remaining: number; status: number; verb: string | undefined }>();
  private readonly requestCounts = new Map<string, number>();
  private port = 0;

  private constructor(types: readonly ResourceType[]) {
    this.store = new ObjectStore(types);
    this.schemas = new CrdSchemas(this.store);
    this.server = createServer((request, response) => {
      this.handle(request, response).catch((error: unknown) => this.fail(response, error));
    });
  }

  /** Starts a server on 127.0.0.1 on a free port. */
  static async start(options: FakeKubeOptions = {}): Promise<FakeKubeServer> {
    const fake = new FakeKubeServer([...builtInTypes, ...(options.customTypes ?? gatewayCustomTypes)]);
    await new Promise<void>((resolve) => fake.server.listen(0, '127.0.0.1', resolve));
    fake.port = (fake.server.address() as AddressInfo).port;
    return fake;
  }

  /** Base URL of the server. */
  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /**
   * A KubeConfig pointing at this server, as a kubeconfig file with one context would; `server`
   * points it elsewhere (a proxy in front of this server, to cut one client off).
   */
  kubeConfig(namespace = 'default', server = this.url): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'fake', server, skipTLSVerify: true }],
      users: [{ name: 'fake', token: 'fake-token' }],
      contexts: [{ name: 'fake', cluster: 'fake', user: 'fake', namespace }],
      currentContext: 'fake',
    });
    return kc;
  }

  /** Discards the change history: watches resuming from an older resourceVersion get 410 Gone. */
  compact(): void {
    this.store.compact();
  }

  /**
   * Closes every open watch stream: abruptly (connection reset, as a network failure) by
   * default, or cleanly (end of the chunked response, as the server's watch timeout does).
   */
  dropWatches(mode: 'reset' | 'end' = 'reset'): number {
    const open = [...this.watches];
    for (const watch of open) {
      if (mode === 'reset') watch.response.socket?.destroy();
      else watch.close();
    }
    return open.length;
  }

  /**
   * Makes the next `count` requests for a resource (by plural, e.g. `managedkeys`) fail with
   * `status`; with `verb` (`get`, `list`, `watch`, `create`, `update`, `patch`, `delete`) only
   * requests of that verb.
   */
  failNext(plural: string, count: number, status = 500, verb?: string): void {
    this.failures.set(plural, { remaining: count, status, verb });
  }

  /** Sends a BOOKMARK with the current resourceVersion to every watch that allowed bookmarks. */
  sendBookmarks(): void {
    for (const watch of this.watches) {
      if (!watch.bookmarks) continue;
      watch.response.write(
        `${JSON.stringify({ type: 'BOOKMARK', object: { metadata: { resourceVersion: String(this.store.resourceVersion) } } })}\n`,
      );
    }
  }

  /** Number of open watch streams. */
  get openWatches(): number {
    return this.watches.size;
  }

  /** How many requests of a verb (`create`, `update`, `patch`, `delete`, `get`, `list`, `watch`) reached a resource. */
  requests(verb: string, plural: string): number {
    return this.requestCounts.get(`${verb} ${plural}`) ?? 0;
  }

  /** Ends all watches and stops listening. */
  async close(): Promise<void> {
    for (const watch of [...this.watches]) watch.close();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', this.url);
    const path = parseRequestPath(url.pathname);
    if (!path) throw new KubeStatusError(404, 'NotFound', 'the server could not find the requested resource');
    if (path.kind === 'root') {
      if (path.path === '/version') return this.send(response, 200, { major: '1', minor: '31', gitVersion: 'v1.31.0-fake' });
      return this.send(response, 200, path.path === '/api' ? coreVersions() : groupList(this.store.allTypes()));
    }
    if (path.kind === 'groupVersion') {
      const list = resourceList(this.store.allTypes(), path.group, path.version);
      if (!list) throw new KubeStatusError(404, 'NotFound', 'the server could not find the requested resource');
      return this.send(response, 200, list);
    }
    const type = this.store.typeFor(path.group, path.plural);
    if (!type || type.version !== path.version)
      throw new KubeStatusError(404, 'NotFound', 'the server could not find the requested resource');
    if (path.subresource !== undefined && !(path.subresource === 'status' && type.statusSubresource)) {
      throw new KubeStatusError(404, 'NotFound', 'the server could not find the requested resource');
    }
    if (type.namespaced === false && path.namespace !== undefined)
      throw new KubeStatusError(404, 'NotFound', 'the server could not find the requested resource');
    const contentType = request.headers['content-type'] ?? '';
    let verb = this.verbOf(request.method ?? 'GET', path.name !== undefined, url.searchParams.get('watch') === 'true');
    if (verb === 'patch' && isApply(contentType)) {
      if (!url.searchParams.get('fieldManager'))
        throw new KubeStatusError(400, 'BadRequest', 'PATCH /apply requires a non-empty fieldManager query parameter');
      // An apply to an absent object creates it (authorized as patch, as on the real server).
      if (!this.store.has(type, type.namespaced ? path.namespace : undefined, path.name!) && !path.subresource) verb = 'apply-create';
    }
    const countedVerb = verb === 'apply-create' ? 'patch' : verb;
    this.requestCounts.set(`${countedVerb} ${type.plural}`, this.requests(countedVerb, type.plural) + 1);
    this.injectFailure(type, countedVerb);
    const namespace = type.namespaced ? path.namespace : undefined;
    const target = path.subresource === 'status' ? 'status' : 'main';
    const name = path.name;
    switch (verb) {
      case 'watch':
        return this.watch(type, namespace, url, response);
      case 'list': {
        const filter = objectFilter(url.searchParams.get('labelSelector'), url.searchParams.get('fieldSelector'));
        const { items, resourceVersion } = this.store.list(type, namespace);
        return this.send(response, 200, {
          apiVersion: type.group ? `${type.group}/${type.version}` : type.version,
          kind: `${type.kind}List`,
          metadata: { resourceVersion: String(resourceVersion) },
          items: items.filter(filter),
        });
      }
      case 'get':
        return this.send(response, 200, this.store.get(type, namespace, name!));
      case 'create':
      case 'apply-create': {
        if (path.subresource) throw new KubeStatusError(405, 'MethodNotAllowed', 'create is not supported on a subresource');
        const body = await readObject(request);
        if (verb === 'apply-create' && body.metadata.name !== name)
          throw new KubeStatusError(400, 'BadRequest', 'the name of the object does not match the name on the URL');
        this.schemas.check(type, body, undefined);
        return this.send(response, 201, this.afterWrite(type, this.store.create(type, namespace, body)));
      }
      case 'update': {
        const body = await readObject(request);
        return this.send(
          response,
          200,
          this.afterWrite(
            type,
            this.store.update(type, namespace, name!, target, (current) => this.checked(type, target, body, current)),
          ),
        );
      }
      case 'patch': {
        const body = await readJson(request);
        return this.send(
          response,
          200,
          this.afterWrite(
            type,
            this.store.update(type, namespace, name!, target, (current) =>
              this.checked(type, target, applyPatch(current, contentType, body), current),
            ),
          ),
        );
      }
      case 'delete': {
        const options = ((await readJson(request, true)) ?? {}) as {
          propagationPolicy?: string;
          preconditions?: { resourceVersion?: string };
        };
        const propagationPolicy = url.searchParams.get('propagationPolicy') ?? options.propagationPolicy;
        const { object, removed } = this.store.delete(type, namespace, name!, {
          ...(propagationPolicy && { propagationPolicy }),
          ...(options.preconditions?.resourceVersion && { preconditionRv: options.preconditions.resourceVersion }),
        });
        if (!removed) return this.send(response, 200, object);
        return this.send(response, 200, {
          kind: 'Status',
          apiVersion: 'v1',
          metadata: {},
          status: 'Success',
          details: { name, group: type.group, kind: type.plural, uid: object.metadata.uid },
        });
      }
      default:
        throw new KubeStatusError(405, 'MethodNotAllowed', `the server does not allow this method on the requested resource`);
    }
  }

  /** A write to the main resource is checked against the kind's stored CRD, if any. */
  private checked(type: ResourceType, target: 'main' | 'status', next: KubeObject, current: KubeObject): KubeObject {
    if (target === 'main') this.schemas.check(type, next, current);
    return next;
  }

  /** The API server keeps a CRD's status itself (names accepted, Established, storedVersions). */
  private afterWrite(type: ResourceType, object: KubeObject): KubeObject {
    if (type !== crdType) return object;
    return this.store.update(type, undefined, object.metadata.name!, 'status', (current) => ({
      ...current,
      status: crdStatusAfterWrite(current),
    }));
  }

  private verbOf(method: string, item: boolean, watch: boolean): string {
    switch (method) {
      case 'GET':
        return item ? 'get' : watch ? 'watch' : 'list';
      case 'POST':
        return item ? 'unsupported' : 'create';
      case 'PUT':
        return item ? 'update' : 'unsupported';
      case 'PATCH':
        return item ? 'patch' : 'unsupported';
      case 'DELETE':
        return item ? 'delete' : 'unsupported';
      default:
        return 'unsupported';
    }
  }

  private injectFailure(type: ResourceType, verb: string): void {
    const failure = this.failures.get(type.plural);
    if (!failure || failure.remaining <= 0 || (failure.verb !== undefined && failure.verb !== verb)) return;
    failure.remaining -= 1;
    throw new KubeStatusError(failure.status, 'InternalError', `Internal error occurred: injected failure for ${type.plural}`);
  }

  /**
   * A watch stream: the current objects as ADDED when no resourceVersion is given, otherwise
   * the changes after it (410 Gone as an ERROR event when they were compacted away), then
   * live changes, one JSON object per line.
   */
  private watch(type: ResourceType, namespace: string | undefined, url: URL, response: ServerResponse): void {
    const filter = objectFilter(url.searchParams.get('labelSelector'), url.searchParams.get('fieldSelector'));
    const wanted = (event: StoredEvent) =>
      event.typeId === typeId(type) && (namespace === undefined || event.object.metadata.namespace === namespace) && filter(event.object);
    const write = (type: string, object: unknown) => response.write(`${JSON.stringify({ type, object })}\n`);
    response.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-cache, private' });
    // A watch may stay quiet for a long time; the client's fetch resolves only once headers arrive.
    response.flushHeaders();
    const from = url.searchParams.get('resourceVersion');
    let replay: StoredEvent[];
    if (!from || from === '0') {
      replay = [];
      for (const object of this.store.list(type, namespace).items.filter(filter)) write('ADDED', object);
    } else {
      const since = this.store.eventsSince(Number(from));
      if (since === 'expired') {
        const gone = new KubeStatusError(410, 'Expired', `too old resource version: ${from} (${this.store.resourceVersion})`);
        write('ERROR', gone.toStatus());
        response.end();
        return;
      }
      replay = since.filter(wanted);
    }
    for (const event of replay) write(event.type, event.object);
    const unsubscribe = this.store.subscribe((event) => {
      if (wanted(event)) write(event.type, event.object);
    });
    const timeoutSeconds = Number(url.searchParams.get('timeoutSeconds') ?? '0');
    const watch: OpenWatch = {
      response,
      bookmarks: url.searchParams.get('allowWatchBookmarks') === 'true',
      close: () => {
        if (!response.writableEnded) response.end();
        cleanup();
      },
    };
    const timer = timeoutSeconds > 0 ? setTimeout(() => watch.close(), timeoutSeconds * 1000) : undefined;
    const cleanup = () => {
      unsubscribe();
      clearTimeout(timer);
      this.watches.delete(watch);
    };
    response.on('close', cleanup);
    this.watches.add(watch);
  }

  private send(response: ServerResponse, status: number, body: unknown): void {
    const text = JSON.stringify(body);
    response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    response.end(text);
  }

  private fail(response: ServerResponse, error: unknown): void {
    const status =
      error instanceof KubeStatusError
        ? error
        : new KubeStatusError(500, 'InternalError', `Internal error occurred: ${(error as Error).message}`);
    if (response.headersSent) {
      response.destroy();
      return;
    }
    this.send(response, status.code, status.toStatus());
  }
}

async function readJson(request: IncomingMessage, optional = false): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') {
    if (optional) return undefined;
    throw new KubeStatusError(400, 'BadRequest', 'the request body is empty');
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new KubeStatusError(400, 'BadRequest', 'the request body is not valid JSON');
  }
}

async function readObject(request: IncomingMessage): Promise<KubeObject> {
  const body = await readJson(request);
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw new KubeStatusError(400, 'BadRequest', 'the request body must be an object');
  const object = body as KubeObject;
  return { ...object, metadata: object.metadata ?? {} };
}
