import { PatchStrategy, setHeaderOptions, type CustomObjectsApi } from '@kubernetes/client-node';
import { isStatus } from '../kube/api-status.js';
import type { Logger } from 'pino';
import { announceRegionPolicyChange, type RegionPolicyRepository } from '../../../core/regions/index.js';
import type { Store } from '../../../core/store/index.js';
import type { WorkOutcome } from '../kube/work-queue.js';
import { OwedAnnouncements } from '../owed-announcements.js';
import { policyProblems, policyRecord, policyStatusChanged, regionPolicyStatus } from './decide.js';
import {
  parseRegionPolicySpec,
  regionPolicyApi,
  regionPolicyFinalizer,
  type RegionPolicyObject,
  type RegionPolicyStatus,
} from './resource.js';

/** The I/O ports and settings of the RegionPolicy reconciler. */
export interface RegionPolicyReconcilerDeps {
  customObjects: CustomObjectsApi;
  policies: RegionPolicyRepository;
  store: Store;
  /** Supplier → region from the catalogue; undefined when the operator has no catalogue. */
  /** Each supplier's region now (the catalogue may change while the operator runs). */
  supplierRegions: (() => ReadonlyMap<string, string>) | undefined;
  clock: () => number;
  logger: Logger;
}

const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const { group, version, plural } = regionPolicyApi;

/**
 * Reconciles one RegionPolicy into PostgreSQL and announces changes, so every gateway reloads
 * its routing restriction; deletion removes the policy before the finalizer goes.
 */
export class RegionPolicyReconciler {
  /** Announcements owed after a failed one, by policy name (paid first by the next reconcile). */
  private readonly owed: OwedAnnouncements;

  constructor(private readonly deps: RegionPolicyReconcilerDeps) {
    this.owed = new OwedAnnouncements((name) => announceRegionPolicyChange(deps.store, name));
  }

  /** Reconciles the RegionPolicy `name`. */
  async reconcile(name: string): Promise<WorkOutcome> {
    await this.owed.payAll();
    let object = await this.read(name);
    if (!object || object.metadata?.deletionTimestamp) {
      if (await this.deps.policies.delete(name)) {
        await this.owed.announce(name, () => announceRegionPolicyChange(this.deps.store, name));
        this.deps.logger.info({ regionPolicy: name }, 'region policy removed');
      }
      if (object) await this.removeFinalizer(object);
      return {};
    }
    if (!(object.metadata?.finalizers ?? []).includes(regionPolicyFinalizer)) {
      object = (await this.deps.customObjects.patchClusterCustomObject(
        {
          group,
          version,
          plural,
          name,
          body: {
            metadata: {
              finalizers: [...(object.metadata?.finalizers ?? []), regionPolicyFinalizer],
              resourceVersion: object.metadata?.resourceVersion,
            },
          },
        },
        mergePatch,
      )) as RegionPolicyObject;
    }
    const now = new Date(this.deps.clock());
    const generation = object.metadata?.generation ?? 0;
    const parsed = parseRegionPolicySpec(object.spec);
    if (!parsed.ok) {
      // The last valid version stays in force: dropping it would widen routing on a typo.
      await this.writeStatus(
        object,
        regionPolicyStatus({ generation, previous: object.status, now, invalidSpec: parsed.message, problems: undefined }),
      );
      return {};
    }
    if (await this.deps.policies.save(policyRecord(name, parsed.spec))) {
      await this.owed.announce(name, () => announceRegionPolicyChange(this.deps.store, name));
      this.deps.logger.info({ regionPolicy: name }, 'region policy stored');
    }
    const problems = this.deps.supplierRegions && policyProblems(parsed.spec, this.deps.supplierRegions());
    await this.writeStatus(object, regionPolicyStatus({ generation, previous: object.status, now, problems }));
    return {};
  }

  /**
   * Deletes the policy rows whose RegionPolicy no longer exists. One removed while no operator
   * was watching (its finalizer taken off by hand) leaves a row that no event will ever name —
   * and keeps restricting routing — so each new leader sweeps once. The rows are read before the
   * objects are listed: a policy created in between is in the list, never taken for an orphan.
   */
  async sweepOrphans(listObjects: () => Promise<readonly RegionPolicyObject[]>): Promise<number> {
    await this.owed.payAll();
    const rows = await this.deps.policies.list();
    if (rows.length === 0) return 0;
    const live = new Set((await listObjects()).map((object) => object.metadata?.name));
    let removed = 0;
    for (const { name } of rows) {
      if (live.has(name) || !(await this.deps.policies.delete(name))) continue;
      await this.owed.announce(name, () => announceRegionPolicyChange(this.deps.store, name));
      this.deps.logger.info({ regionPolicy: name }, 'orphaned region policy removed: its RegionPolicy is gone');
      removed++;
    }
    return removed;
  }

  private async read(name: string): Promise<RegionPolicyObject | undefined> {
    try {
      return (await this.deps.customObjects.getClusterCustomObject({ group, version, plural, name })) as RegionPolicyObject;
    } catch (error) {
      if (isStatus(error, 404)) return undefined;
      throw error;
    }
  }

  private async removeFinalizer(object: RegionPolicyObject): Promise<void> {
    const finalizers = object.metadata?.finalizers ?? [];
    if (!finalizers.includes(regionPolicyFinalizer)) return;
    await this.deps.customObjects.patchClusterCustomObject(
      {
        group,
        version,
        plural,
        name: object.metadata?.name ?? '',
        body: {
          metadata: {
            finalizers: finalizers.filter((f) => f !== regionPolicyFinalizer),
            resourceVersion: object.metadata?.resourceVersion,
          },
        },
      },
      mergePatch,
    );
  }

  private async writeStatus(object: RegionPolicyObject, status: RegionPolicyStatus): Promise<void> {
    if (!policyStatusChanged(object.status, status)) return;
    await this.deps.customObjects.patchClusterCustomObjectStatus({
      group,
      version,
      plural,
      name: object.metadata?.name ?? '',
      body: [{ op: 'add', path: '/status', value: status }],
    });
  }
}
