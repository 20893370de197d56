import type { ModelRoute } from '../../../core/config/index.js';

/** What ordering needs to know beyond the routes themselves. */
export interface OrderingFacts {
  /** Supplier the request's session is pinned to, if any. */
  pinnedSupplier: string | null;
  isOpen(supplier: string): boolean;
  /** Uniform random in [0, 1); injectable so tests are deterministic. */
  random(): number;
}

/** Weighted random order (Efraimidis–Spirakis): each route's share of first places follows its weight. */
function weightedShuffle(routes: readonly ModelRoute[], random: () => number): ModelRoute[] {
  return routes
    .map((route) => ({ route, score: Math.pow(random(), 1 / route.supplier.weight) }))
    .sort((a, b) => b.score - a.score)
    .map((x) => x.route);
}

/** The order candidates are tried in, and the one that would be tried first were every supplier healthy. */
export interface Ranking {
  ordered: ModelRoute[];
  /**
   * The first-ranked route by session pin, priority and weight alone: the preferred supplier.
   * An answer from any other route (the preferred one failed, or was skipped because its
   * circuit is open) is a failover.
   */
  preferred: ModelRoute | undefined;
}

/**
 * The order in which candidates are tried: the session's pinned supplier first (if healthy),
 * then by priority (lower first) with weighted random order inside a priority, healthy
 * suppliers before those whose circuit is open (still tried last rather than failing early).
 */
export function rankCandidates(routes: readonly ModelRoute[], facts: OrderingFacts): Ranking {
  const byPriority = new Map<number, ModelRoute[]>();
  for (const route of routes) {
    const group = byPriority.get(route.supplier.priority) ?? [];
    group.push(route);
    byPriority.set(route.supplier.priority, group);
  }
  const ordered = [...byPriority.keys()].sort((a, b) => a - b).flatMap((p) => weightedShuffle(byPriority.get(p)!, facts.random));
  const healthy = ordered.filter((r) => !facts.isOpen(r.supplier.name));
  const open = ordered.filter((r) => facts.isOpen(r.supplier.name));
  const pinnedIndex = healthy.findIndex((r) => r.supplier.name === facts.pinnedSupplier);
  if (pinnedIndex > 0) healthy.unshift(...healthy.splice(pinnedIndex, 1));
  const preferred = ordered.find((r) => r.supplier.name === facts.pinnedSupplier) ?? ordered[0];
  return { ordered: [...healthy, ...open], preferred };
}

/** The order of rankCandidates alone. */
export function orderCandidates(routes: readonly ModelRoute[], facts: OrderingFacts): ModelRoute[] {
  return rankCandidates(routes, facts).ordered;
}
