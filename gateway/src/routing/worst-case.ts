import type { ModelRoute } from '../../../core/config/index.js';

/**
 * The highest of a per-unit price over the routes a request may take: what a reservation must
 * assume, since any compliant route may end up answering.
 */
export function maxPrice(routes: readonly ModelRoute[], price: (route: ModelRoute) => number): number {
  let worst = 0;
  for (const route of routes) worst = Math.max(worst, price(route));
  return worst;
}
