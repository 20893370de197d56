// The autorouter policy (docs/autorouter.md): how the pseudo-model `auto` chooses among the
// models a key may use. Four layers may say something — the organisation's policy (set by its
// administrators), the user's preference, the key's own preference, and an administrator's
// override of one key — and one rule combines them, here, for the gateway and the portal alike.

/** How `auto` ranks the usable models: lowest price first, or highest price first. */
export const autorouterModes = ['cheapest', 'premium'] as const;
/** One ranking mode. */
export type AutorouterMode = (typeof autorouterModes)[number];

/** What one layer says; an absent or null field leaves the decision to the next layer. */
export interface AutorouterLayer {
  mode?: AutorouterMode | null;
  /** Models `auto` tries first, in this order, before ranking the rest. */
  prefer?: readonly string[] | null;
  /** Models `auto` never chooses. */
  exclude?: readonly string[] | null;
}

/** The layers of one key, each absent when nobody set it. */
export interface AutorouterLayers {
  organisation?: AutorouterLayer | undefined;
  user?: AutorouterLayer | undefined;
  key?: AutorouterLayer | undefined;
  /** An administrator's override of the key: it wins over what the key's owner chose. */
  keyOverride?: AutorouterLayer | undefined;
}

/** The policy `auto` applies for a key: every field decided. */
export interface AutorouterPolicy {
  mode: AutorouterMode;
  prefer: string[];
  exclude: string[];
}

/** What `auto` does when no layer says anything: the cheapest usable model. */
export const defaultAutorouterPolicy: AutorouterPolicy = { mode: 'cheapest', prefer: [], exclude: [] };

/** Where each layer stands, most specific first: the first layer that sets a field decides it. */
const precedence = ['keyOverride', 'key', 'user', 'organisation'] as const;

/**
 * The effective policy of a key. Mode and preferred models come from the most specific layer
 * that sets them (an administrator's key override, then the key, the user, the organisation);
 * exclusions add up across every layer, so a model the organisation excludes stays excluded
 * whatever its members prefer. A preferred model that is also excluded is dropped.
 */
export function effectiveAutorouterPolicy(layers: AutorouterLayers): AutorouterPolicy {
  const ordered = precedence.map((name) => layers[name]).filter((l): l is AutorouterLayer => l !== undefined);
  const mode = ordered.find((l) => l.mode)?.mode ?? defaultAutorouterPolicy.mode;
  const exclude = [...new Set(ordered.flatMap((l) => l.exclude ?? []))].sort();
  const prefer = (ordered.find((l) => l.prefer && l.prefer.length > 0)?.prefer ?? []).filter((m) => !exclude.includes(m));
  return { mode, prefer: [...new Set(prefer)], exclude };
}

/** Whether the policy is the default one (the gateway then needs nothing from it). */
export function isDefaultAutorouterPolicy(policy: AutorouterPolicy): boolean {
  return policy.mode === defaultAutorouterPolicy.mode && policy.prefer.length === 0 && policy.exclude.length === 0;
}
