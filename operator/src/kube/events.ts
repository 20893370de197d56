import { randomBytes } from 'node:crypto';
import type { CoreV1Api, KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';

/** What a person should see in `kubectl describe` / `kubectl get events` about one object. */
export interface EventNote {
  type: 'Normal' | 'Warning';
  /** UpperCamelCase, stable: alerts and scripts match on it. */
  reason: string;
  message: string;
}

/**
 * Records core/v1 Events about the objects the operator reconciles. Best-effort: an Event that
 * cannot be written is logged and never fails or repeats a reconcile (the status conditions carry
 * the same facts durably).
 */
export class EventRecorder {
  constructor(
    private readonly core: CoreV1Api,
    private readonly identity: string,
    private readonly clock: () => number,
    private readonly logger: Logger,
  ) {}

  async record(object: KubernetesObject, note: EventNote): Promise<void> {
    const { name = '', namespace, uid } = object.metadata ?? {};
    // A cluster-scoped object's Events live in the default namespace, as Kubernetes' own do.
    const eventNamespace = namespace ?? 'default';
    const now = new Date(this.clock());
    try {
      await this.core.createNamespacedEvent({
        namespace: eventNamespace,
        body: {
          metadata: { name: `${name}.${now.getTime().toString(16)}${randomBytes(4).toString('hex')}`, namespace: eventNamespace },
          involvedObject: { apiVersion: object.apiVersion, kind: object.kind, name, ...(namespace && { namespace }), ...(uid && { uid }) },
          type: note.type,
          reason: note.reason,
          message: note.message,
          source: { component: 'svc-gateway-operator' },
          reportingComponent: 'svc-gateway-operator',
          reportingInstance: this.identity,
          firstTimestamp: now,
          lastTimestamp: now,
          count: 1,
        },
      });
    } catch (error) {
      this.logger.warn(
        { err: error, object: `${object.kind}/${namespace ? `${namespace}/` : ''}${name}`, reason: note.reason },
        'event not recorded',
      );
    }
  }
}
