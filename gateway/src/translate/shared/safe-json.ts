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

/**
 * Tool-call arguments as an object: invalid JSON or a non-object value gives `{}`. Arguments sent
 * as a JSON object rather than a string (some OpenAI-compatible servers do) are that object — they
 * were read as `{}`, the model's arguments silently lost.
 */
export function parseToolArguments(value: unknown): Record<string, unknown> {
  if (isJsonObject(value)) return value;
  const parsed = typeof value === 'string' ? parseJson(value) : undefined;
  return isJsonObject(parsed) ? parsed : {};
}

/**
 * Tool calls (of a message or a stream delta) whose `function.arguments` is a JSON object, given
 * the string OpenAI's schema requires, in place. Called only where tool calls exist.
 */
export function stringifyObjectArguments(calls: unknown[]): void {
  for (const call of calls) {
    if (isJsonObject(call) && isJsonObject(call.function) && isJsonObject(call.function.arguments))
      call.function.arguments = JSON.stringify(call.function.arguments);
  }
}
