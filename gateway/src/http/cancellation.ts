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

  constructor(reply: FastifyReply) {
    super();
    reply.raw.once('close', () => {
      if (!reply.raw.writableFinished) this.abort(undefined);
    });
  }

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.emit('abort');
  }
}

/**
 * The signal of one supplier attempt: aborts when the request is cancelled or when the
 * attempt's own deadline passes (then `reason` is the timeout error the client will see).
 * `dispose()` must be called when the attempt is over, to clear the timer and the listener.
 */
export class AttemptSignal extends EventEmitter {
  aborted = false;
  reason: unknown;
  private readonly timer: NodeJS.Timeout;
  private readonly onCancel = () => this.abort(this.request.reason);

  constructor(
    private readonly request: RequestCancellation,
    deadlineMs: number,
    timeoutError: () => ApiError,
  ) {
    super();
    this.timer = setTimeout(() => this.abort(timeoutError()), deadlineMs);
    if (request.aborted) this.abort(request.reason);
    else request.once('abort', this.onCancel);
  }

  private abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.emit('abort');
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.request.off('abort', this.onCancel);
  }
}
