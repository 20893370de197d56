import type { SupplierCredential } from '../../../core/config/index.js';
import { EventEmitter } from 'node:events';
import type { FastifyReply } from 'fastify';
import type { ApiError } from '../../../core/errors/index.js';

/**
 * Aborted when the client goes away before its response is complete, so supplier calls are
 * cancelled instead of working (and billing) for nobody. An EventEmitter with `aborted` and
 * `reason`, which undici accepts as `signal` at a fraction of an AbortController's cost.
 */
export class RequestCancellation extends EventEmitter {
  aborted = false;
  reason: unknown;

  /**
   * `inFlight`: the gateway's requests under way, which a shutdown past its grace ends and then
   * waits for until each has settled and appended its audit record (server.ts); the caller calls
   * `finished()` once it has.
   */
  constructor(
    reply: FastifyReply,
    private readonly inFlight?: Set<RequestCancellation>,
  ) {
    super();
    // A client already gone (e.g. during a long upload, before routing began) is gone now.
    if (reply.raw.destroyed || reply.request.raw.socket?.destroyed === true) {
      this.abort(undefined);
      return;
    }
    inFlight?.add(this);
    reply.raw.once('close', () => {
      if (!reply.raw.writableFinished) this.abort(undefined);
    });
  }

  /** The request settled and its audit record was appended: a shutdown need not wait for it. */
  finished(): void {
    this.inFlight?.delete(this);
  }

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.emit('abort');
  }
}

/**
 * The signal of one supplier attempt: aborts when the request is cancelled, when no response
 * headers arrived within the supplier's first-byte timeout, or when the whole-call deadline
 * passes (`reason` is then the timeout error the client will see). Our own timers, because
 * undici's timeouts tick at about one second and first-byte timeouts are often shorter.
 * `dispose()` must be called when the attempt is over, to clear timers and the listener.
 */
export class AttemptSignal extends EventEmitter {
  aborted = false;
  reason: unknown;
  /** `traceparent` (and `tracestate`) of the attempt's span, sent to the supplier; only when tracing is on. */
  traceHeaders: Record<string, string> | undefined = undefined;
  /** The pooled credential this attempt uses (routing/credential-pool.ts); absent: the supplier's single key. */
  credential: SupplierCredential | undefined = undefined;
  private readonly deadline: NodeJS.Timeout;
  private firstByte: NodeJS.Timeout | undefined;
  private readonly onCancel = () => this.abort(this.request.reason);

  constructor(
    private readonly request: RequestCancellation,
    timeouts: { timeoutMs: number; firstByteTimeoutMs: number },
    deadlineError: () => ApiError,
    firstByteError: () => ApiError,
  ) {
    super();
    this.deadline = setTimeout(() => this.abort(deadlineError()), timeouts.timeoutMs);
    this.firstByte = setTimeout(() => this.abort(firstByteError()), timeouts.firstByteTimeoutMs);
    if (request.aborted) this.abort(request.reason);
    else request.once('abort', this.onCancel);
  }

  /** The supplier's response headers arrived: the first-byte timer stops. */
  firstByteArrived(): void {
    clearTimeout(this.firstByte);
    this.firstByte = undefined;
  }

  private abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.emit('abort');
  }

  dispose(): void {
    clearTimeout(this.deadline);
    clearTimeout(this.firstByte);
    this.request.off('abort', this.onCancel);
  }
}
