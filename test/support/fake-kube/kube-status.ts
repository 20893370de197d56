/** Reasons the real API server puts in a failure Status (the subset the fake produces). */
export type StatusReason =
  | 'NotFound'
  | 'AlreadyExists'
  | 'Conflict'
  | 'Invalid'
  | 'BadRequest'
  | 'MethodNotAllowed'
  | 'UnsupportedMediaType'
  | 'Expired'
  | 'InternalError';

/** A failure the API server answers with a `Status` object (and the same HTTP status). */
export class KubeStatusError extends Error {
  constructor(
    readonly code: number,
    readonly reason: StatusReason,
    message: string,
    readonly details?: { name?: string; kind?: string; group?: string },
  ) {
    super(message);
  }

  /** The `Status` body a client sees: what `@kubernetes/client-node` parses into ApiException.body. */
  toStatus(): Record<string, unknown> {
    return {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: this.message,
      reason: this.reason,
      ...(this.details && { details: this.details }),
      code: this.code,
    };
  }
}

/** `<resource> "<name>" not found`, as the real server words it. */
export function notFound(plural: string, group: string, name: string): KubeStatusError {
  const resource = group ? `${plural}.${group}` : plural;
  return new KubeStatusError(404, 'NotFound', `${resource} "${name}" not found`, { name, kind: plural, group });
}

/** The conflict an update with a stale resourceVersion gets (optimistic concurrency). */
export function staleConflict(plural: string, group: string, name: string): KubeStatusError {
  const resource = group ? `${plural}.${group}` : plural;
  return new KubeStatusError(
    409,
    'Conflict',
    `Operation cannot be fulfilled on ${resource} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
    { name, kind: plural, group },
  );
}
