// Anthropic refuses tool ids outside ^[a-zA-Z0-9_-]+$ while OpenAI-compatible suppliers and
// clients send ids with dots, colons or other characters. Both tool_use.id and
// tool_result.tool_use_id go through this one function, so a pair that matched before still
// matches after (docs/interfaces.md §Translation rules, rule 5).

const disallowed = /[^a-zA-Z0-9_-]/g;

/** A tool-call id made safe for Anthropic: every disallowed character becomes `_`; deterministic. */
export function sanitizeToolId(id: string): string {
  const safe = id.replace(disallowed, '_');
  // An empty id cannot pass the schemas, but keep the result non-empty whatever comes in.
  return safe.length > 0 ? safe : '_';
}
