// Tool-call arguments are a model-written string: often valid JSON, sometimes truncated, empty or
// not an object at all (docs/interfaces.md §Translation rules, rule 6). A translation must never throw on them.

/** Parses JSON text, or returns undefined when it is not valid JSON. */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** True for a plain JSON object (not null, not an array). */
export function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Tool-call arguments as an object: invalid JSON or a non-object value gives `{}`. */
export function parseToolArguments(text: string): Record<string, unknown> {
  const parsed = parseJson(text);
  return isJsonObject(parsed) ? parsed : {};
}
