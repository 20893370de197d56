import { defaultAutorouterPolicy } from '../../../core/autorouter/policy.js';
import type { Catalogue, ModelCapability, ModelRoute, SupplierProtocol } from '../../../core/config/index.js';
import { ApiError } from '../../../core/errors/index.js';
import type { KeyRecord } from '../../../core/keys/index.js';
import type { RegionPolicies } from '../../../core/regions/index.js';

/** The pseudo-model a client sends to let the gateway choose. */
export const autoModel = 'auto';

/** What a request needs from the model `auto` picks. */
export interface AutoRequirements {
  capabilities: readonly ModelCapability[];
  /** Estimated prompt tokens; models whose context window is known to be smaller are skipped. */
  promptTokens: number;
  region: string | undefined;
  /** Supplier protocols the calling interface can use (a Responses-only model cannot serve chat). */
  protocols: readonly SupplierProtocol[];
}

/** The same region rules as pickCandidates: call region, key regions, and the region policies in force. */
function routeAllowed(
  route: ModelRoute,
  key: KeyRecord,
  region: string | undefined,
  protocols: readonly SupplierProtocol[],
  policies: RegionPolicies | undefined,
): boolean {
  return (
    protocols.includes(route.supplier.protocol) &&
    (!region || route.supplier.region === region) &&
    (!key.allowedRegions || key.allowedRegions.includes(route.supplier.region)) &&
    (!policies || policies.allows(route.supplier.region, route.supplier.name))
  );
}

/** Price used to rank models: input + output USD per million tokens of the cheapest allowed route. */
function cheapestPrice(routes: readonly ModelRoute[]): number {
  return Math.min(...routes.map((r) => r.model.inputUsdPerMtok + r.model.outputUsdPerMtok));
}

/**
 * Resolves `auto` (docs/autorouter.md) under the key's autorouter policy. Usable models are those
 * the key may use, not excluded by the policy, with every required capability, a supplier
 * speaking a protocol the interface can use, a large enough context window and at least one
 * route in an allowed region. The first usable preferred model wins; otherwise the cheapest (or,
 * in `premium` mode, the most expensive) by input + output price; ties go to the alphabetically
 * first id so the choice is stable.
 */
export function resolveAutoModel(catalogue: Catalogue, key: KeyRecord, needs: AutoRequirements): string {
  const region = needs.region?.toUpperCase();
  const policies = catalogue.regionPolicies?.current();
  const policy = key.autorouter ?? defaultAutorouterPolicy;
  const usable = new Map<string, number>();
  for (const [id, routes] of catalogue.routes) {
    if (key.allowedModels && !key.allowedModels.includes(id)) continue;
    if (policy.exclude.includes(id)) continue;
    const fit = routes.filter(
      (r) =>
        routeAllowed(r, key, region, needs.protocols, policies) &&
        needs.capabilities.every((c) => r.model.capabilities.includes(c)) &&
        (r.model.contextWindow === undefined || r.model.contextWindow >= needs.promptTokens),
    );
    if (fit.length > 0) usable.set(id, cheapestPrice(fit));
  }
  const preferred = policy.prefer.find((id) => usable.has(id));
  if (preferred !== undefined) return preferred;
  const sign = policy.mode === 'premium' ? -1 : 1;
  let best: { id: string; price: number } | undefined;
  for (const [id, price] of usable) {
    if (!best || sign * price < sign * best.price || (price === best.price && id < best.id)) best = { id, price };
  }
  if (!best) {
    throw new ApiError('autorouter_no_candidate', {
      param: 'model',
      humanMessage: `No model your key may use offers ${needs.capabilities.join(', ')}${region ? ` in ${region}` : ''}${
        policy.exclude.length > 0 ? ` (your autorouter policy excludes ${policy.exclude.join(', ')})` : ''
      }; name a model instead of "auto"`,
    });
  }
  return best.id;
}
