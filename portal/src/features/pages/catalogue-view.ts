// The public price list and model list, computed once from the catalogue the portal was started
// with (the same YAML/PostgreSQL catalogue the gateway serves).
import type { Catalogue, ModelCapability } from '../../../../core/config/index.js';

/** One public model as the pricing and models pages show it. */
export interface PublicModel {
  id: string;
  ownedBy: string;
  capabilities: readonly ModelCapability[];
  /** Regions some supplier serves it in, sorted. */
  regions: string[];
  /** Price lines, e.g. "$0.15 / 1M input tokens". */
  prices: string[];
  contextWindow: number | undefined;
}

/** A price in dollars with as many decimals as it needs (never rounded to zero): amounts of money are web/usd.ts's. */
export function formatPrice(amount: number): string {
  const decimals = amount === 0 ? 2 : Math.min(6, Math.max(2, -Math.floor(Math.log10(amount)) + 2));
  return `$${amount.toFixed(decimals).replace(/(\.\d\d\d*?)0+$/, '$1')}`;
}

/** The models of the catalogue, priced by their first-ranked route (the one normally serving them). */
export function publicModels(catalogue: Catalogue): PublicModel[] {
  const models: PublicModel[] = [];
  for (const [id, routes] of catalogue.routes) {
    const primary = routes[0];
    if (!primary) continue;
    const m = primary.model;
    const prices: string[] = [];
    if (m.inputUsdPerMtok > 0) prices.push(`${formatPrice(m.inputUsdPerMtok)} / 1M input tokens`);
    if (m.outputUsdPerMtok > 0) prices.push(`${formatPrice(m.outputUsdPerMtok)} / 1M output tokens`);
    if (m.cachedInputUsdPerMtok > 0 && m.cachedInputUsdPerMtok !== m.inputUsdPerMtok)
      prices.push(`${formatPrice(m.cachedInputUsdPerMtok)} / 1M cached input tokens`);
    if (m.usdPerAudioMinute > 0) prices.push(`${formatPrice(m.usdPerAudioMinute)} / audio minute`);
    if (m.usdPerMchar > 0) prices.push(`${formatPrice(m.usdPerMchar)} / 1M characters`);
    if (prices.length === 0) prices.push('included');
    models.push({
      id,
      ownedBy: m.ownedBy,
      capabilities: m.capabilities,
      regions: [...new Set(routes.map((r) => r.supplier.region))].sort(),
      prices,
      contextWindow: m.contextWindow,
    });
  }
  return models.sort((a, b) => a.id.localeCompare(b.id));
}

/** The model the portal's code examples call: the catalogue's first chat model (any deployment's, not only the demo's). */
export function exampleChatModel(catalogue: Catalogue): string {
  return publicModels(catalogue).find((m) => m.capabilities.includes('chat'))?.id ?? 'gpt-4o-mini';
}
