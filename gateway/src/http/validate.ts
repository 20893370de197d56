import { z } from 'zod';
import { ApiError } from '../../../core/errors/index.js';

function pathOf(path: readonly PropertyKey[]): string {
  return path.reduce<string>(
    (acc, part) => (typeof part === 'number' ? `${acc}[${part}]` : acc ? `${acc}.${String(part)}` : String(part)),
    '',
  );
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
  if (issue.code === 'unrecognized_keys') {
    // Zod reports unknown fields on the object that holds them; name the first unknown field itself.
    const param = pathOf([...issue.path, issue.keys[0] ?? '']);
    throw new ApiError('validation_error', {
      param,
      humanMessage: `Unknown field "${param}"; see the documentation for the fields this endpoint takes`,
    });
  }
  // A rule about the body as a whole (a PATCH with no field): no field to name.
  if (issue.path.length === 0) throw new ApiError('validation_error', { humanMessage: `Invalid request body: ${issue.message}` });
  const param = pathOf(issue.path);
  // A required top-level field that is absent is "missing" whatever the field's schema is (a union
  // such as embeddings' `input` reports invalid_union, not invalid_type): one rule on every interface.
  const missing = issue.path.length === 1 && (body as Record<string, unknown>)[String(issue.path[0])] === undefined;
  if (missing && param === 'model') throw new ApiError('missing_model', { param, humanMessage: 'The "model" field is required' });
  if (missing) throw new ApiError('missing_fields', { param, humanMessage: `The "${param}" field is required` });
  throw new ApiError('validation_error', { param, humanMessage: `Invalid value for "${param}": ${issue.message}` });
}

/**
 * A request's `model`: a catalogue model id (at most 200 characters, core/config/catalogue.ts) or
 * an alias. A longer one can name no model, and would otherwise travel into the request log and
 * the audit record as the client sent it.
 */
export const modelIdField = z.string().min(1).max(200, 'must be a model id of at most 200 characters');
