import { PatchStrategy, setHeaderOptions, type CoreV1Api, type CustomObjectsApi, type V1Secret } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { isStatus } from '../kube/api-status.js';
import { readBudgetUsage } from '../../../core/budget/index.js';
import { outageSource } from '../../../core/errors/dependency-outage.js';
import { announceKeyChange, generateSecret, hashSecret, type KeyRecord, type KeyRepository } from '../../../core/keys/index.js';
import type { Store } from '../../../core/store/index.js';
import { describeError } from '../kube/controller.js';
import type { EventNote, EventRecorder } from '../kube/events.js';
import type { WorkOutcome } from '../kube/work-queue.js';
import { OwedAnnouncements } from '../owed-announcements.js';
import {
  desiredKey,
  managedKeyStatus,
  nextBudgetCheckMs,
  planRow,
  planSecret,
  statusChanged,
  unresolvedNames,
  type SecretObservation,
  budgetWriteMayWait,
  infrastructureStatus,
  type InfrastructureReason,
  type BudgetStatusThrottle,
} from './decide.js';
import {
  keyOwnerKindPrefix,
  keySecretLabel,
  keyOwnerOf,
  keyOwnerPrefix,
  managedKeyApi,
  managedKeyLabel,
  managedKeyLabelValue,
  managedKeyFinalizer,
  parseManagedKeySpec,
  secretNameOf,
  type ManagedKeyObject,
  type ManagedKeyStatus,
} from './resource.js';

/** The I/O ports and settings of the ManagedKey reconciler. */
export interface ManagedKeyReconcilerDeps {
  customObjects: CustomObjectsApi;
  core: CoreV1Api;
  keys: KeyRepository;
  store: Store;
  pepper: string;
  /** Catalogue names to check specs against; undefined when the operator has no catalogue. */
  catalogue: { models: ReadonlySet<string>; regions: ReadonlySet<string> } | undefined;
  /** How often a key with a budget is looked at again for its status. */
  budgetRefreshMs: number;
  /** When usage alone is written to status (decide.ts budgetWriteMayWait); absent: at every change. */
  budgetStatusThrottle?: BudgetStatusThrottle;
  clock: () => number;
  logger: Logger;
  /** Kubernetes Events on outcomes a person should see; none when absent. */
  events?: EventRecorder;
}

/** The Secret's data key holding the API key (docs/crds.md, "The Secret"). */
export const secretDataKey = 'apiKey';

const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const { group, version, plural } = managedKeyApi;

/**
 * Reconciles one ManagedKey into its Secret, key row and cache entries, and reports in status.
 * Level-triggered: reads the object, the Secret and the row, lets the decisions in decide.ts
 * choose, and writes only what differs; running it twice changes nothing the second time.
 */
export class ManagedKeyReconciler {
  /** Key cache evictions owed after a failed announcement, by secret hash. */
  private readonly owed: OwedAnnouncements;
  /** When each object's budget usage was last written to its status (epoch ms; this process only). */
  private readonly budgetWrittenAt = new Map<string, number>();

  constructor(private readonly deps: ManagedKeyReconcilerDeps) {
    this.owed = new OwedAnnouncements((secretHash) => announceKeyChange(deps.store, secretHash));
  }

  /**
   * Reconciles the ManagedKey `<namespace>/<name>`. A failure on the database or the store is
   * also written to the object's Ready condition (with a Warning event) before the queue retries,
   * so a platform engineer sees it with kubectl; an API failure cannot be written there.
   */
  async reconcile(ref: string): Promise<WorkOutcome> {
    try {
      return await this.reconcileOnce(ref);
    } catch (error) {
      await this.reportReconcileError(ref, error);
      throw error;
    }
  }

  /**
   * A reconcile's failure on the object's Ready condition: an outage of the database or the store
   * names it; any other failure (the API server refusing a write, the database refusing a row) is
   * `ReconcileError` with the error's one-line description — it was only logged, and `kubectl wait
   * --for condition=Ready` waited with nothing on the object to say why (outside probe).
   */
  private async reportReconcileError(ref: string, error: unknown): Promise<void> {
    const [namespace, name] = ref.split('/') as [string, string];
    try {
      const object = await this.read(namespace, name);
      if (!object || object.metadata?.deletionTimestamp) return;
      const { reason, message } = failureCondition(error);
      const status = infrastructureStatus(object.status, reason, message, object.metadata?.generation ?? 0, new Date(this.deps.clock()));
      if (await this.writeStatus(object, status)) await this.event(object, { type: 'Warning', reason, message });
    } catch {
      // The API itself failing: nothing more can be reported on the object; the queue retries.
    }
  }

  private async reconcileOnce(ref: string): Promise<WorkOutcome> {
    await this.owed.payAll();
    const [namespace, name] = ref.split('/') as [string, string];
    let object = await this.read(namespace, name);
    if (!object) {
      // Gone without our finalizer having run (removed by hand): drop whatever key it left.
      await this.deleteKeys(keyOwnerPrefix(namespace, name));
      return {};
    }
    if (object.metadata?.deletionTimestamp) {
      await this.finalize(object);
      return {};
    }
    if (!(object.metadata?.finalizers ?? []).includes(managedKeyFinalizer)) object = await this.addFinalizer(object);
    const now = new Date(this.deps.clock());
    const generation = object.metadata?.generation ?? 0;
    const parsed = parseManagedKeySpec(object.spec);
    if (!parsed.ok) {
      const rawName = (object.spec as { secretName?: unknown } | undefined)?.secretName;
      const secretName = typeof rawName === 'string' ? rawName : `${name}-key`;
      if (
        await this.writeStatus(
          object,
          managedKeyStatus({
            generation,
            previous: object.status,
            now,
            secretName,
            invalidSpec: parsed.message,
            secretConflict: false,
            key: undefined,
            unresolved: undefined,
            usage: undefined,
          }),
        )
      ) {
        await this.event(object, { type: 'Warning', reason: 'InvalidSpec', message: parsed.message });
      }
      return {};
    }
    const spec = parsed.spec;
    const secretName = secretNameOf(name, spec);
    const owner = keyOwnerOf(object);
    const unresolved = this.deps.catalogue && unresolvedNames(spec, this.deps.catalogue);
    let key = await this.deps.keys.findByManagedBy(owner);

    const secretPlan = planSecret(await this.observeSecret(namespace, secretName, object));
    if (secretPlan.action === 'conflict') {
      if (
        await this.writeStatus(
          object,
          managedKeyStatus({
            generation,
            previous: object.status,
            now,
            secretName,
            secretConflict: true,
            key: undefined,
            unresolved,
            usage: undefined,
          }),
        )
      ) {
        await this.event(object, {
          type: 'Warning',
          reason: 'SecretConflict',
          message: `Secret ${secretName} exists and is not owned by this ManagedKey; no key is issued until it is removed or secretName changes`,
        });
      }
      // Secrets are not watched: look again later in case the other Secret is removed.
      return { requeueAfterMs: this.deps.budgetRefreshMs };
    }
    let apiKey: string;
    if (secretPlan.action === 'use') {
      apiKey = secretPlan.apiKey;
    } else {
      apiKey = generateSecret('managed');
      await this.writeSecret(object, secretName, apiKey, secretPlan.action === 'rewrite');
      await this.event(object, {
        type: 'Normal',
        reason: secretPlan.action === 'rewrite' ? 'SecretRewritten' : 'SecretCreated',
        message: `Secret ${secretName} written with a new API key`,
      });
    }

    const desired = desiredKey(namespace, name, spec);
    const rowPlan = planRow(key, hashSecret(apiKey, this.deps.pepper), desired);
    switch (rowPlan.action) {
      case 'create':
        key = (await this.deps.keys.create({ kind: 'managed', source: 'crd', managedBy: owner, ...desired }, apiKey)).record;
        await this.announce(key.secretHash);
        this.deps.logger.info({ managedKey: ref, keyId: key.id }, 'key created');
        await this.event(object, { type: 'Normal', reason: 'KeyCreated', message: `Key ${key.id} issued` });
        break;
      case 'update': {
        let updated = key!;
        if (rowPlan.rotate) {
          const oldHash = updated.secretHash;
          updated = (await this.deps.keys.replaceSecret(updated.id, apiKey))!;
          await this.announce(oldHash);
          this.deps.logger.info({ managedKey: ref, keyId: updated.id }, 'key secret replaced from its Secret');
          await this.event(object, {
            type: 'Normal',
            reason: 'KeyRotated',
            message: `Key ${updated.id} now accepts the API key in its Secret; the previous one stopped working`,
          });
        }
        if (rowPlan.patch) updated = (await this.deps.keys.update(updated.id, rowPlan.patch))!;
        await this.announce(updated.secretHash);
        key = updated;
        break;
      }
      case 'none':
        break;
      default: {
        const unreachable: never = rowPlan;
        throw new Error(`unknown row plan ${JSON.stringify(unreachable)}`);
      }
    }

    const usage = key!.budgetLimitUsd === null ? undefined : await readBudgetUsage(this.deps.store, key!, now);
    const status = managedKeyStatus({
      generation,
      previous: object.status,
      now,
      secretName,
      secretConflict: false,
      key,
      unresolved,
      usage,
    });
    const objectKey = `${object.metadata?.namespace ?? ''}/${object.metadata?.name ?? ''}`;
    const lastBudgetWrite = this.budgetWrittenAt.get(objectKey) ?? Number.NEGATIVE_INFINITY;
    const wait =
      this.deps.budgetStatusThrottle !== undefined &&
      budgetWriteMayWait(object.status, status, key!.budgetLimitUsd, now.getTime() - lastBudgetWrite, this.deps.budgetStatusThrottle);
    if (!wait && (await this.writeStatus(object, status)) && status.budget) this.budgetWrittenAt.set(objectKey, now.getTime());
    const next = nextBudgetCheckMs(key, usage, now, this.deps.budgetRefreshMs);
    return next === undefined ? {} : { requeueAfterMs: next };
  }

  private async read(namespace: string, name: string): Promise<ManagedKeyObject | undefined> {
    try {
      return (await this.deps.customObjects.getNamespacedCustomObject({ group, version, namespace, plural, name })) as ManagedKeyObject;
    } catch (error) {
      if (isStatus(error, 404)) return undefined;
      throw error;
    }
  }

  /** Deletion: the key row and its cache entries go, then the finalizer (the Secret follows by owner reference). */
  private async finalize(object: ManagedKeyObject): Promise<void> {
    const { namespace = '', name = '' } = object.metadata ?? {};
    await this.deleteKeys(keyOwnerPrefix(namespace, name));
    const finalizers = object.metadata?.finalizers ?? [];
    if (!finalizers.includes(managedKeyFinalizer)) return;
    await this.deps.customObjects.patchNamespacedCustomObject(
      {
        group,
        version,
        namespace,
        plural,
        name,
        body: {
          metadata: { finalizers: finalizers.filter((f) => f !== managedKeyFinalizer), resourceVersion: object.metadata?.resourceVersion },
        },
      },
      mergePatch,
    );
    this.deps.logger.info({ managedKey: `${namespace}/${name}` }, 'key deleted');
  }

  /**
   * Deletes the key rows whose ManagedKey no longer exists. An object removed while no operator
   * was watching (its finalizer removed by hand) leaves a row that no event will ever name, so
   * each new leader sweeps once. The rows are read before the objects are listed: a key created
   * in between belongs to an object the list will show, so it is never taken for an orphan.
   */
  async sweepOrphans(listObjects: () => Promise<readonly ManagedKeyObject[]>): Promise<number> {
    await this.owed.payAll();
    const rows = await this.deps.keys.listManagedByPrefix(keyOwnerKindPrefix);
    if (rows.length === 0) return 0;
    const live = new Set((await listObjects()).map((object) => keyOwnerOf(object)));
    let removed = 0;
    for (const row of rows) {
      if (row.managedBy === null || live.has(row.managedBy)) continue;
      await this.deps.keys.delete(row.id);
      await this.announce(row.secretHash);
      this.deps.logger.info({ keyId: row.id, owner: row.managedBy }, 'orphaned key deleted: its ManagedKey is gone');
      removed++;
    }
    return removed;
  }

  /** Tells the gateways that a key changed; a failure leaves its eviction owed, paid by the next reconcile. */
  private announce(secretHash: string): Promise<void> {
    return this.owed.announce(secretHash, () => announceKeyChange(this.deps.store, secretHash));
  }

  private async deleteKeys(ownerPrefix: string): Promise<void> {
    const keys: KeyRecord[] = await this.deps.keys.listManagedByPrefix(ownerPrefix);
    for (const key of keys) {
      await this.deps.keys.delete(key.id);
      await this.announce(key.secretHash);
    }
  }

  private async addFinalizer(object: ManagedKeyObject): Promise<ManagedKeyObject> {
    const { namespace = '', name = '', resourceVersion } = object.metadata ?? {};
    // The resourceVersion makes this a conditional write: a stale read conflicts (409) and is retried.
    return (await this.deps.customObjects.patchNamespacedCustomObject(
      {
        group,
        version,
        namespace,
        plural,
        name,
        body: { metadata: { finalizers: [...(object.metadata?.finalizers ?? []), managedKeyFinalizer], resourceVersion } },
      },
      mergePatch,
    )) as ManagedKeyObject;
  }

  private async observeSecret(namespace: string, name: string, owner: ManagedKeyObject): Promise<SecretObservation> {
    let secret: V1Secret;
    try {
      secret = await this.deps.core.readNamespacedSecret({ namespace, name });
    } catch (error) {
      if (isStatus(error, 404)) return { kind: 'missing' };
      throw error;
    }
    const ours = (secret.metadata?.ownerReferences ?? []).some((r) => r.uid === owner.metadata?.uid && r.controller === true);
    if (!ours) return { kind: 'foreign' };
    const encoded = secret.data?.[secretDataKey];
    return { kind: 'owned', apiKey: encoded === undefined ? undefined : Buffer.from(encoded, 'base64').toString('utf8') };
  }

  /** Creates the Secret (or rewrites ours); a name taken meanwhile is a conflict the retry will see. */
  private async writeSecret(owner: ManagedKeyObject, name: string, apiKey: string, replace: boolean): Promise<void> {
    const namespace = owner.metadata?.namespace ?? '';
    const body: V1Secret = {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'Opaque',
      metadata: {
        name,
        namespace,
        labels: { [keySecretLabel.name]: keySecretLabel.value, [managedKeyLabel]: managedKeyLabelValue(owner.metadata?.name ?? '') },
        annotations: { [managedKeyLabel]: owner.metadata?.name ?? '' },
        ownerReferences: [
          {
            apiVersion: `${group}/${version}`,
            kind: managedKeyApi.kind,
            name: owner.metadata?.name ?? '',
            uid: owner.metadata?.uid ?? '',
            controller: true,
            blockOwnerDeletion: true,
          },
        ],
      },
      data: { [secretDataKey]: Buffer.from(apiKey, 'utf8').toString('base64') },
    };
    if (replace) await this.deps.core.replaceNamespacedSecret({ namespace, name, body });
    else await this.deps.core.createNamespacedSecret({ namespace, body });
  }

  private async event(object: ManagedKeyObject, note: EventNote): Promise<void> {
    await this.deps.events?.record({ ...object, apiVersion: `${group}/${version}`, kind: managedKeyApi.kind }, note);
  }

  /** Writes the status when it differs; true when it did. */
  private async writeStatus(object: ManagedKeyObject, status: ManagedKeyStatus): Promise<boolean> {
    if (!statusChanged(object.status, status)) return false;
    const { namespace = '', name = '' } = object.metadata ?? {};
    // JSON patch `add /status` replaces the whole status, so fields that went away go too.
    await this.deps.customObjects.patchNamespacedCustomObjectStatus({
      group,
      version,
      namespace,
      plural,
      name,
      body: [{ op: 'add', path: '/status', value: status }],
    });
    return true;
  }
}

/** The Ready condition's reason and message for a reconcile that failed with `error`. */
function failureCondition(error: unknown): { reason: InfrastructureReason; message: string } {
  const source = outageSource(error);
  if (source === 'database' || source === 'store') {
    const what = source === 'database' ? 'PostgreSQL' : 'the store (Redis)';
    return {
      reason: source === 'database' ? 'DatabaseUnavailable' : 'StoreUnavailable',
      message: `${what} could not be reached: ${error instanceof Error ? error.message : String(error)}; retrying`,
    };
  }
  return { reason: 'ReconcileError', message: `The reconcile failed: ${describeError(error)}; retrying` };
}
