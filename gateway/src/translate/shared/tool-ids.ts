// Anthropic refuses tool ids outside ^[a-zA-Z0-9_-]+$ while OpenAI-compatible suppliers and
// clients send ids with dots, colons or other characters. Both tool_use.id and
// tool_result.tool_use_id go through this one function, so a pair that matched before still
// matches after (docs/interfaces.md §Translation rules, rule 5).

import { createHash } from 'node:crypto';

const disallowed = /[^a-zA-Z0-9_-]/g;

/**
 * A tool-call id made safe for Anthropic; deterministic, and valid ids stay as they are. An id
 * that had to change gets every disallowed character as `_` and a short digest of the original,
 * so two ids differing only there (`c.1`, `c:1`) do not become one — pairs would no longer match.
 */
export function sanitizeToolId(id: string): string {
  if (id.length > 0 && !/[^a-zA-Z0-9_-]/.test(id)) return id;
  const digest = createHash('sha256').update(id).digest('base64url').slice(0, 8);
  return `${id.replace(disallowed, '_')}_${digest}`;
}
