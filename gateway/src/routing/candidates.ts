import type { Catalogue, ModelCapability, ModelRoute, SupplierProtocol } from '../../../core/config/index.js';
import { ApiError } from '../../../core/errors/index.js';
import type { KeyRecord } from '../../../core/keys/index.js';

/** What the calling interface can use: the protocols it can translate to and the capability it needs. */
export interface InterfaceNeeds {
  protocols: readonly SupplierProtocol[];
  capability: ModelCapability;
}

/**
 * The routes allowed to serve this request, in preference order: the model's suppliers that
 * speak a protocol the interface can use, restricted to the call's region and the key's allowed
 * regions. No compliant route is a hard failure; a request is never routed outside its region.
 */
export function pickCandidates(
  catalogue: Catalogue,
  model: string,
  key: KeyRecord,
  callRegion: string | undefined,
  needs: InterfaceNeeds,
): readonly ModelRoute[] {
  const routes = catalogue.routes.get(model);
  if (!routes) {
    throw new ApiError('model_not_found', { param: 'model', humanMessage: `The model "${model}" does not exist; GET /v1/models lists the models you can use` });
  }
  if (key.allowedModels && !key.allowedModels.includes(model)) {
    throw new ApiError('model_not_allowed', { param: 'model', humanMessage: `Your API key is not allowed to use the model "${model}"` });
  }
  const capable = routes.filter((r) => r.model.capabilities.includes(needs.capability) && needs.protocols.includes(r.supplier.protocol));
  if (capable.length === 0) {
    throw new ApiError('capability_unsupported', {
      param: 'model',
      humanMessage: `The model "${model}" cannot be used on this endpoint (it needs ${needs.capability} through ${needs.protocols.join(' or ')} suppliers)`,
    });
  }
  const region = callRegion?.toUpperCase();
  if (region && key.allowedRegions && !key.allowedRegions.includes(region)) {
    throw new ApiError('provider_redirect_forbidden', {
      param: 'region',
      humanMessage: `Your API key may only be routed in ${key.allowedRegions.join(', ')}, not ${region}`,
    });
  }
  const compliant = capable.filter(
    (r) => (!region || r.supplier.region === region) && (!key.allowedRegions || key.allowedRegions.includes(r.supplier.region)),
  );
  if (compliant.length === 0) {
    const allowed = region ? [region] : (key.allowedRegions ?? []);
    // Group D (403, not retryable): only a policy or catalogue change can make this succeed.
    throw new ApiError('provider_redirect_forbidden', {
      param: region ? 'region' : 'model',
      humanMessage: `No supplier in ${allowed.join(', ')} serves "${model}"; the request was not sent outside the region`,
      details: { model, regions: allowed },
    });
  }
  return compliant;
}
