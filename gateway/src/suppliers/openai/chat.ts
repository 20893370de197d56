import type { ModelRoute } from '../../../../core/config/index.js';
import { ApiError } from '../../../../core/errors/index.js';
import type { ClientDisconnect } from '../../http/client-abort.js';
import type { UpstreamClient, UpstreamResponse } from '../../http/upstream-client.js';
import { mapOpenAiError } from './errors.js';

/** Fields that steer the gateway and mean nothing (or something else) to the supplier. */
const gatewayOnlyFields = ['region'] as const;
/** Metadata keys the gateway reads for session affinity; not forwarded. */
const gatewayMetadataKeys = ['session_id', 'sticky_key'] as const;

/** The body sent to an OpenAI-protocol supplier: the client's, with the upstream model id. */
export function openAiChatBody(body: Record<string, unknown>, route: ModelRoute): string {
  const upstream: Record<string, unknown> = { ...body, model: route.model.upstream };
  for (const field of gatewayOnlyFields) delete upstream[field];
  if (upstream.metadata && typeof upstream.metadata === 'object') {
    const metadata = { ...(upstream.metadata as Record<string, unknown>) };
    for (const key of gatewayMetadataKeys) delete metadata[key];
    // OpenAI refuses metadata unless `store` is on; send it only where the client meant it.
    if (Object.keys(metadata).length === 0 || upstream.store !== true) delete upstream.metadata;
    else upstream.metadata = metadata;
  }
  return JSON.stringify(upstream);
}

/** Headers for an OpenAI-protocol supplier call. */
export function openAiHeaders(route: ModelRoute, requestId: string): Record<string, string> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'x-request-id': requestId,
  };
  if (route.supplier.apiKey) headers.authorization = `Bearer ${route.supplier.apiKey}`;
  return headers;
}

/**
 * Calls `POST {base_url}/chat/completions`. Resolves with the response when the supplier
 * answered 2xx; otherwise reads the error body and throws the mapped catalogue error.
 */
export async function callOpenAiChat(
  client: UpstreamClient,
  route: ModelRoute,
  body: Record<string, unknown>,
  requestId: string,
  signal: ClientDisconnect,
): Promise<UpstreamResponse> {
  const response = await client.post({
    url: `${route.supplier.baseUrl}/chat/completions`,
    headers: openAiHeaders(route, requestId),
    body: openAiChatBody(body, route),
    timeoutMs: route.supplier.timeoutMs,
    signal,
    supplier: route.supplier.name,
  });
  if (response.statusCode >= 200 && response.statusCode < 300) return response;
  let text = '';
  try {
    text = await response.body.text();
  } catch (cause) {
    throw new ApiError('upstream_error', { cause, details: { supplier: route.supplier.name } });
  }
  throw mapOpenAiError(response.statusCode, response.headers, text, route.supplier.name);
}
