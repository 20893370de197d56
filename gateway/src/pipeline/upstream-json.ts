import type { ModelRoute } from '../../../core/config/index.js';
import { ApiError } from '../../../core/errors/index.js';
import type { UpstreamResponse } from '../http/upstream-client.js';

/** Reads a supplier's 2xx JSON body; a body that is not JSON is the supplier's fault (failover-able 502). */
export async function readJson(upstream: UpstreamResponse, route: ModelRoute): Promise<unknown> {
  try {
    return await upstream.body.json();
  } catch (cause) {
    throw new ApiError('non_json_provider_response', { cause, details: { supplier: route.supplier.name } });
  }
}
