import type { z } from 'zod';
import { ApiError } from '../../../core/errors/index.js';

function pathOf(path: readonly PropertyKey[]): string {
  return path.reduce<string>((acc, part) => (typeof part === 'number' ? `${acc}[${part}]` : acc ? `${acc}.${String(part)}` : String(part)), '');
}

/**
 * Validates a body against an interface schema. The first problem becomes the error: a missing
 * `model` is `missing_model`, other missing fields `missing_fields`, anything else
 * `validation_error` — each with `param` naming the field.
 */
export function validateBody<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  if (body === undefined) throw new ApiError('invalid_json', { humanMessage: 'The request body is empty; send a JSON object' });
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new ApiError('invalid_request', { humanMessage: 'The request body must be a JSON object' });
  }
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const param = pathOf(issue.path);
  const missing = issue.code === 'invalid_type' && (body as Record<string, unknown>)[String(issue.path[0])] === undefined && issue.path.length === 1;
  if (missing && param === 'model') throw new ApiError('missing_model', { param, humanMessage: 'The "model" field is required' });
  if (missing) throw new ApiError('missing_fields', { param, humanMessage: `The "${param}" field is required` });
  throw new ApiError('validation_error', { param, humanMessage: `Invalid value for "${param}": ${issue.message}` });
}
