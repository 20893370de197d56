import { Agent, errors as undiciErrors, type Dispatcher } from 'undici';
import { ApiError } from '../../../core/errors/index.js';
import type { ClientDisconnect } from './client-abort.js';

/** A response from a supplier: status, headers and the body stream (must be consumed or dumped). */
export type UpstreamResponse = Dispatcher.ResponseData;

/** One HTTP call to a supplier. */
export interface UpstreamRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  /** Aborted when the client goes away, so the supplier stops working for nobody. */
  signal: ClientDisconnect;
  /** Supplier name, reported in error details (never its URL or credential). */
  supplier: string;
}

/**
 * Pooled keep-alive HTTP to suppliers (undici). Connection, header and body timeouts come from
 * the supplier's `timeout_ms`; transport failures become catalogue errors with the cause kept.
 */
export class UpstreamClient {
  private readonly agent = new Agent({
    connections: 512,
    keepAliveTimeout: 30_000,
    keepAliveMaxTimeout: 600_000,
    connect: { timeout: 10_000 },
  });

  async post(request: UpstreamRequest): Promise<UpstreamResponse> {
    const url = new URL(request.url);
    try {
      return await this.agent.request({
        origin: url.origin,
        path: url.pathname + url.search,
        method: 'POST',
        headers: request.headers,
        body: request.body,
        headersTimeout: request.timeoutMs,
        bodyTimeout: request.timeoutMs,
        signal: request.signal,
      });
    } catch (cause) {
      throw transportError(cause, request.supplier);
    }
  }

  async close(): Promise<void> {
    await this.agent.close();
  }
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
