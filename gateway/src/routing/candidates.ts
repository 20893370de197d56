import type { Catalogue, ModelCapability, ModelRoute, SupplierProtocol } from '../../../core/config/index.js';
import { ApiError } from '../../../core/errors/index.js';
import type { KeyRecord } from '../../../core/keys/index.js';
import { autoModel } from './auto-model.js';

/** What the calling interface can use: the protocols it can translate to and the capability it needs. */
export interface InterfaceNeeds {
  protocols: readonly SupplierProtocol[];
  capability: ModelCapability;
}

/**
 * The routes allowed to serve this request, in preference order: the model's suppliers that
 * speak a protocol the interface can use, restricted to the call's region, the key's allowed
 * regions and the region policies in force (catalogue.regionPolicies, in memory). No compliant
 * route is a hard failure; a request is never routed outside its region or its policy.
 */
export function pickCandidates(
  catalogue: Catalogue,
  model: string,
  key: KeyRecord,
  callRegion: string | undefined,
  needs: InterfaceNeeds,
): readonly ModelRoute[] {
  const routes = catalogue.routes.get(model);
  // `auto` is resolved to a catalogue model by the chat interfaces before they get here; on any
  // other endpoint it is listed by GET /v1/models, so "does not exist" would be wrong.
  if (!routes && model === autoModel) {
    throw new ApiError('capability_unsupported', {
      param: 'model',
      humanMessage: `Automatic routing ("model": "auto") serves /v1/chat/completions and /v1/messages only; name a model for this endpoint (GET /v1/models lists them)`,
    });
  }
  if (!routes) {
    throw new ApiError('model_not_found', {
      param: 'model',
      humanMessage: `The model "${model}" does not exist; GET /v1/models lists the models you can use`,
    });
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
  const inRegion = capable.filter(
    (r) => (!region || r.supplier.region === region) && (!key.allowedRegions || key.allowedRegions.includes(r.supplier.region)),
  );
  // RegionPolicy resources: in a region a policy lists, only its named suppliers may serve.
  const policies = catalogue.regionPolicies?.current();
  const compliant = policies ? inRegion.filter((r) => policies.allows(r.supplier.region, r.supplier.name)) : inRegion;
  if (compliant.length === 0 && inRegion.length > 0) {
    const regions = [...new Set(inRegion.map((r) => r.supplier.region))];
    throw new ApiError('provider_redirect_forbidden', {
      param: region ? 'region' : 'model',
      humanMessage: `The region policy for ${regions.join(', ')} allows no supplier that serves "${model}"; the request was not sent to another supplier`,
      details: { model, regions },
    });
  }
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
