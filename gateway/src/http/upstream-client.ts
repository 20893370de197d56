import type { Readable } from 'node:stream';
import { Agent, errors as undiciErrors, type Dispatcher } from 'undici';
import type { Supplier } from '../../../core/config/index.js';
import { ApiError } from '../../../core/errors/index.js';
import { defaultAnswerLimitBytes } from './bounded-body.js';
import type { AttemptSignal } from './cancellation.js';

/** A response from a supplier: status, headers and the body stream (must be consumed or dumped). */
export type UpstreamResponse = Dispatcher.ResponseData;

/**
 * Pooled keep-alive HTTP to suppliers (undici), one connection pool per supplier so each has
 * its own connect timeout. Header and between-chunk timeouts come from the supplier's
 * `first_byte_timeout_ms`; the whole-call deadline is the attempt signal's. Transport failures
 * become catalogue errors with the cause kept.
 */
export class UpstreamClient {
  private readonly agents = new Map<string, Agent>();

  /** @param answerLimitBytes most bytes of a JSON answer read (http/bounded-body.ts). */
  constructor(readonly answerLimitBytes = defaultAnswerLimitBytes) {}
  private readonly targets = new Map<string, { origin: string; path: string }>();

  private agentFor(supplier: Supplier): Agent {
    let agent = this.agents.get(supplier.name);
    if (!agent) {
      agent = new Agent({
        connections: 512,
        keepAliveTimeout: 30_000,
        keepAliveMaxTimeout: 600_000,
        connect: { timeout: supplier.connectTimeoutMs },
      });
      this.agents.set(supplier.name, agent);
    }
    return agent;
  }

  /**
   * Origin and path of `{baseUrl}{path}`, parsed once: the same few URLs are called on every
   * request (the catalogue's suppliers times each protocol's paths), and a URL parse per call
   * showed in the profile. Cleared if it ever grows past what a catalogue plausibly holds.
   */
  private targetOf(baseUrl: string, path: string): { origin: string; path: string } {
    const href = `${baseUrl}${path}`;
    let target = this.targets.get(href);
    if (!target) {
      const url = new URL(href);
      target = { origin: url.origin, path: url.pathname + url.search };
      if (this.targets.size >= 10_000) this.targets.clear();
      this.targets.set(href, target);
    }
    return target;
  }

  async post(
    supplier: Supplier,
    path: string,
    headers: Record<string, string>,
    body: string | Readable,
    signal: AttemptSignal,
  ): Promise<UpstreamResponse> {
    const target = this.targetOf(supplier.baseUrl, path);
    try {
      return await this.agentFor(supplier).request({
        origin: target.origin,
        path: target.path,
        method: 'POST',
        headers: signal.traceHeaders ? { ...headers, ...signal.traceHeaders } : headers,
        body,
        headersTimeout: supplier.firstByteTimeoutMs,
        bodyTimeout: supplier.firstByteTimeoutMs,
        signal,
      });
    } catch (cause) {
      throw transportError(cause, supplier.name);
    }
  }

  async close(): Promise<void> {
    await Promise.all([...this.agents.values()].map((agent) => agent.close()));
  }
}

/**
 * Classifies a failure while a supplier's stream was being relayed: a stall past the body
 * timeout is the supplier's timeout (`provider_timeout`, as before the first byte); anything else
 * that is not already a catalogue error (a connection dropped mid-stream) is `stream_interrupted`.
 */
export function streamBreak(cause: unknown, supplier: string): ApiError {
  if (cause instanceof ApiError) return cause;
  const transport = transportError(cause, supplier);
  if (transport.code === 'provider_timeout') return transport;
  return new ApiError('stream_interrupted', { cause, details: { supplier } });
}

/**
 * A stream failure seen before any byte reached the client, as the client is told of it: a stream
 * that stopped (`stream_interrupted`) generated nothing and sent nothing, so it is as safe to
 * retry as a refused request (`x-should-retry: true`). Other failures keep their own advice.
 */
export function failedBeforeFirstByte(error: ApiError): ApiError {
  if (error.code !== 'stream_interrupted' || error.retryable) return error;
  return new ApiError('stream_interrupted', {
    humanMessage: error.humanMessage,
    cause: error.cause,
    ...(error.details !== undefined && { details: error.details }),
    retryable: true,
  });
}

/** Classifies a transport failure: timeouts → provider_timeout, refused/reset → provider_unavailable. */
export function transportError(cause: unknown, supplier: string): ApiError {
  if (cause instanceof ApiError) return cause;
  if (
    cause instanceof undiciErrors.HeadersTimeoutError ||
    cause instanceof undiciErrors.BodyTimeoutError ||
    cause instanceof undiciErrors.ConnectTimeoutError ||
    (cause instanceof Error && cause.name === 'TimeoutError')
  ) {
    return new ApiError('provider_timeout', { cause, details: { supplier } });
  }
  if (cause instanceof undiciErrors.RequestAbortedError || (cause instanceof Error && cause.name === 'AbortError')) {
    return new ApiError('request_rejected', { humanMessage: 'The request was cancelled before the provider answered', cause });
  }
  return new ApiError('provider_unavailable', { cause, details: { supplier } });
}
