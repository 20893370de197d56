// The bounds of the display settings object (POST /dashboard/settings/display-name): free
// properties, stored as given, but never large or deep enough to weigh on the users table or on
// a page that renders them.

export const displaySettingsLimits = { bytes: 8_192, depth: 6, properties: 200 };

/** Why `value` is not an acceptable settings object, or undefined when it is. */
export function displaySettingsProblem(value: unknown): string | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'must be a JSON object';
  // Depth and count first: serialising a body nested thousands deep would overflow the stack.
  const shapeProblem = boundedShapeProblem(value);
  if (shapeProblem) return shapeProblem;
  if (JSON.stringify(value).length > displaySettingsLimits.bytes) return `must be at most ${displaySettingsLimits.bytes} bytes as JSON`;
  return undefined;
}

function boundedShapeProblem(value: object): string | undefined {
  let properties = 0;
  const walk = (node: unknown, depth: number): string | undefined => {
    if (node === null || typeof node !== 'object') return undefined;
    if (depth > displaySettingsLimits.depth) return `must nest at most ${displaySettingsLimits.depth} levels deep`;
    const children = Array.isArray(node) ? node : Object.values(node as Record<string, unknown>);
    if (!Array.isArray(node)) properties += children.length;
    if (properties > displaySettingsLimits.properties) return `must hold at most ${displaySettingsLimits.properties} properties`;
    for (const child of children) {
      const problem = walk(child, depth + 1);
      if (problem) return problem;
    }
    return undefined;
  };
  return walk(value, 1);
}
