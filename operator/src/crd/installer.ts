import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  ApiException,
  PatchStrategy,
  setHeaderOptions,
  type ApiextensionsV1Api,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { parse as parseYaml } from 'yaml';
import { isStatus } from '../kube/api-status.js';
import { decideCrdChange, schemaRevisionOf, type CrdDecision } from './decide.js';

/**
 * The CRDs shipped with this operator: crds/ at the repository root when run from source, and
 * dist/crds in the image (deploy/Dockerfile copies them next to the compiled code).
 */
export const bundledCrdDir = fileURLToPath(new URL('../../../crds/', import.meta.url));

/** The field manager the operator's server-side applies are recorded under. */
export const crdFieldManager = 'svc-gateway-operator';

const serverSideApply = setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply);

/** What happened to one CRD. */
export interface CrdOutcome {
  name: string;
  revision: number;
  decision: CrdDecision | { action: 'failed'; reason: string };
}

/** Reads every CustomResourceDefinition in a directory (one per .yaml file). */
export function readBundledCrds(dir = bundledCrdDir): V1CustomResourceDefinition[] {
  return readdirSync(dir)
    .filter((file) => file.endsWith('.yaml'))
    .sort()
    .map((file) => {
      const crd = parseYaml(readFileSync(join(dir, file), 'utf8')) as V1CustomResourceDefinition;
      if (crd?.kind !== 'CustomResourceDefinition' || !crd.metadata?.name)
        throw new Error(`${join(dir, file)} is not a CustomResourceDefinition with a name`);
      return crd;
    });
}

/**
 * Brings the cluster's CRDs up to the bundled ones, so a `helm upgrade` (which never touches a
 * chart's crds/) still upgrades the schema. Server-side apply under one field manager, forced:
 * fields this operator applied before and no longer ships are removed, nothing else is, and no
 * CRD is ever deleted. decideCrdChange guards against downgrades and against dropping a stored
 * version. A CRD that cannot be applied (no permission, API down) is logged and the operator goes
 * on with the schema the cluster has: serving keys matters more than a newer schema.
 */
export async function applyBundledCrds(api: ApiextensionsV1Api, crds: V1CustomResourceDefinition[], logger: Logger): Promise<CrdOutcome[]> {
  const outcomes: CrdOutcome[] = [];
  for (const crd of crds) {
    const name = crd.metadata!.name!;
    const revision = schemaRevisionOf(crd);
    try {
      const decision = await decideAndApply(api, crd);
      if (decision.action === 'apply') {
        logger.info({ crd: name, revision, reason: decision.reason }, 'CustomResourceDefinition applied');
      } else if (decision.action === 'keep') {
        logger.info(
          { crd: name, revision, clusterRevision: decision.clusterRevision },
          'CustomResourceDefinition in the cluster is newer; kept',
        );
      } else {
        logger.error(
          { crd: name, revision, storedVersions: decision.versions },
          'CustomResourceDefinition not applied: it would stop serving versions objects are stored in (migrate storage first, docs/deploy.md)',
        );
      }
      outcomes.push({ name, revision, decision });
    } catch (error) {
      const reason = error instanceof ApiException ? `HTTP ${error.code}` : (error as Error).message;
      logger.error({ crd: name, revision, err: error }, 'CustomResourceDefinition could not be applied; the cluster keeps its schema');
      outcomes.push({ name, revision, decision: { action: 'failed', reason } });
    }
  }
  return outcomes;
}

/**
 * Reads, decides and applies one CRD. The apply carries the resourceVersion the decision was
 * made on, so it fails (409) if another replica changed the CRD in between — a replica of the
 * previous release must not overwrite the revision a newer one has just applied; it reads again
 * and decides again.
 */
async function decideAndApply(api: ApiextensionsV1Api, crd: V1CustomResourceDefinition): Promise<CrdDecision> {
  const name = crd.metadata!.name!;
  for (let attempt = 1; ; attempt += 1) {
    const existing = await readCrd(api, name);
    const decision = decideCrdChange(crd, existing);
    if (decision.action !== 'apply') return decision;
    const resourceVersion = existing?.metadata?.resourceVersion;
    const body = resourceVersion ? { ...crd, metadata: { ...crd.metadata, resourceVersion } } : crd;
    try {
      await api.patchCustomResourceDefinition({ name, body, fieldManager: crdFieldManager, force: true }, serverSideApply);
      return decision;
    } catch (error) {
      if (!isStatus(error, 409) || attempt === 3) throw error;
    }
  }
}

async function readCrd(api: ApiextensionsV1Api, name: string): Promise<V1CustomResourceDefinition | undefined> {
  try {
    return await api.readCustomResourceDefinition({ name });
  } catch (error) {
    if (isStatus(error, 404)) return undefined;
    throw error;
  }
}
