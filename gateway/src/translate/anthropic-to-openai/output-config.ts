// Anthropic's `output_config` for an OpenAI-protocol supplier: the structured-output format the
// answer must follow becomes OpenAI's strict `response_format`; the effort is a hint, left out as
// `thinking` is (an OpenAI model that does not reason refuses `reasoning_effort`).
import { ApiError } from '../../../../core/errors/index.js';
import type { ChatCompletionRequest } from '../../interfaces/chat-completions/schema.js';
import type { TranslationContext } from '../types.js';
import { isJsonObject } from '../shared/safe-json.js';

type ResponseFormat = NonNullable<ChatCompletionRequest['response_format']>;

/** The keys of `output_config` this translation reads. */
const outputConfigKeys: ReadonlySet<string> = new Set(['format', 'effort']);

/** The name OpenAI requires on a JSON schema format; Anthropic's has none. */
const schemaName = 'output';

/**
 * The `response_format` a request's `output_config` asks for; undefined when it asks for none
 * (absent, null, or only an effort). A format other than a JSON schema, or a key this translation
 * does not know, is refused naming it rather than answered in free text.
 */
export function responseFormatFromOutputConfig(outputConfig: unknown, context: TranslationContext): ResponseFormat | undefined {
  if (outputConfig === undefined || outputConfig === null) return undefined;
  if (!isJsonObject(outputConfig))
    throw new ApiError('validation_error', { param: 'output_config', humanMessage: 'output_config must be an object' });
  for (const [key, value] of Object.entries(outputConfig)) {
    if (value === null || value === undefined || outputConfigKeys.has(key)) continue;
    throw new ApiError('unsupported_parameter', {
      param: `output_config.${key}`,
      humanMessage: `Model ${context.publicModel} is served here through an OpenAI-protocol supplier, which has no output_config.${key}; omit it`,
    });
  }
  const format = outputConfig.format;
  if (format === undefined || format === null) return undefined;
  if (!isJsonObject(format) || format.type !== 'json_schema' || !isJsonObject(format.schema))
    throw new ApiError('validation_error', {
      param: 'output_config.format',
      humanMessage: 'output_config.format must be {"type": "json_schema", "schema": {...}}',
    });
  // Strict where OpenAI's strict mode takes the schema, as Anthropic's structured output holds the
  // answer to it; OpenAI refuses strict for a schema with an optional property or an open object,
  // which Anthropic accepts, so such a schema goes without (the answer is then asked for, not held).
  return { type: 'json_schema', json_schema: { name: schemaName, schema: format.schema, strict: strictCompatible(format.schema) } };
}

/**
 * Whether OpenAI's strict mode takes `schema`: every object schema lists all its properties as
 * required and closes itself (`additionalProperties: false`), down through properties, items and
 * the `anyOf`/`$defs` it holds. Bounded in depth like the documents the gateway reads.
 */
export function strictCompatible(schema: unknown, depth = 0): boolean {
  if (depth > 32) return false;
  if (Array.isArray(schema)) return schema.every((s) => strictCompatible(s, depth + 1));
  if (!isJsonObject(schema)) return true;
  const properties = schema.properties;
  const objectLike = schema.type === 'object' || (Array.isArray(schema.type) && schema.type.includes('object')) || isJsonObject(properties);
  if (objectLike) {
    if (schema.additionalProperties !== false) return false;
    // A set: a schema may name tens of thousands of properties (a list look-up each was quadratic).
    const required = new Set<unknown>(Array.isArray(schema.required) ? schema.required : []);
    if (isJsonObject(properties) && !Object.keys(properties).every((name) => required.has(name))) return false;
  }
  for (const key of ['properties', '$defs', 'definitions'] as const) {
    const children = schema[key];
    if (isJsonObject(children) && !Object.values(children).every((child) => strictCompatible(child, depth + 1))) return false;
  }
  for (const key of ['items', 'anyOf', 'allOf', 'oneOf', 'prefixItems'] as const) {
    if (schema[key] !== undefined && !strictCompatible(schema[key], depth + 1)) return false;
  }
  return true;
}
