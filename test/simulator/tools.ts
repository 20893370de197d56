// Tool-call planning shared by the three chat-like APIs: which tools get "called" and with
// which arguments. Arguments are built from the tool's JSON schema so they always validate.

/** A tool as the simulator needs it, whatever the wire format it came in. */
export interface ToolSpec {
  name: string;
  schema: unknown;
  /** An OpenAI `custom` tool: free-text input instead of JSON arguments. */
  custom?: true;
}

/** One tool the simulated model decides to call; `arguments` is a JSON string (a custom tool's: its text input). */
export interface PlannedCall {
  name: string;
  arguments: string;
  custom?: true;
}

/** Normalised tool choice: `auto`, `required` (Anthropic `any`), `none`, or a named tool. */
export type ToolMode = 'auto' | 'required' | 'none' | { name: string };

/** Thrown when a request names a tool that is not in its tool list (real APIs answer 400). */
export class UnknownToolError extends Error {}

/**
 * Decides the calls: the named tool when one is forced, two tools in parallel when the choice
 * is `required`, parallel use is allowed and at least two tools exist, otherwise the first tool.
 * Returns [] when there is nothing to call.
 */
export function planToolCalls(tools: readonly ToolSpec[], mode: ToolMode, parallel: boolean): PlannedCall[] {
  if (tools.length === 0 || mode === 'none') return [];
  if (typeof mode === 'object') {
    const tool = tools.find((t) => t.name === mode.name);
    if (!tool) throw new UnknownToolError(`tool '${mode.name}' not found in tools`);
    return [toCall(tool)];
  }
  const first = tools[0];
  const second = tools[1];
  if (!first) return [];
  if (mode === 'required' && parallel && second) return [toCall(first), toCall(second)];
  return [toCall(first)];
}

function toCall(tool: ToolSpec): PlannedCall {
  if (tool.custom) return { name: tool.name, arguments: `input for ${tool.name}`, custom: true };
  return { name: tool.name, arguments: JSON.stringify(valueFromSchema(tool.schema, tool.name, 0) ?? {}) };
}

type Schema = Record<string, unknown>;

function isSchema(v: unknown): v is Schema {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * A deterministic value that satisfies a JSON schema: objects get their required properties
 * (all properties when `required` is absent), strings honour enum/format, arrays get one item.
 */
export function valueFromSchema(schema: unknown, key: string, depth: number): unknown {
  if (!isSchema(schema) || depth > 8) return {};
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  for (const combo of ['anyOf', 'oneOf', 'allOf'] as const) {
    const options = schema[combo];
    if (Array.isArray(options)) {
      const pick = options.find((o) => isSchema(o) && o.type !== 'null') ?? options[0];
      if (pick !== undefined) return valueFromSchema(pick, key, depth + 1);
    }
  }
  let type = schema.type;
  if (Array.isArray(type)) type = type.find((t) => t !== 'null') ?? type[0];
  if (type === undefined && isSchema(schema.properties)) type = 'object';
  switch (type) {
    case 'string':
      return stringFor(schema, key);
    case 'integer':
      return typeof schema.minimum === 'number' ? Math.ceil(schema.minimum) : 1;
    case 'number':
      return typeof schema.minimum === 'number' ? schema.minimum : 1.5;
    case 'boolean':
      return true;
    case 'null':
      return null;
    case 'array': {
      const min = typeof schema.minItems === 'number' ? Math.max(1, schema.minItems) : 1;
      const item = valueFromSchema(schema.items, key, depth + 1);
      return Array.from({ length: Math.min(min, 8) }, () => item);
    }
    case 'object':
    default: {
      const out: Record<string, unknown> = {};
      const props = isSchema(schema.properties) ? schema.properties : {};
      const required = Array.isArray(schema.required)
        ? schema.required.filter((r): r is string => typeof r === 'string')
        : Object.keys(props);
      for (const name of required) out[name] = valueFromSchema(props[name], name, depth + 1);
      return out;
    }
  }
}

function stringFor(schema: Schema, key: string): string {
  switch (schema.format) {
    case 'date':
      return '2024-01-01';
    case 'date-time':
      return '2024-01-01T00:00:00Z';
    case 'email':
      return 'sim@example.com';
    case 'uri':
    case 'url':
      return 'https://example.com/sim';
    case 'uuid':
      return '00000000-0000-4000-8000-000000000000';
    default: {
      const value = `sim-${key}`;
      return typeof schema.minLength === 'number' && value.length < schema.minLength ? value.padEnd(schema.minLength, 'x') : value;
    }
  }
}
