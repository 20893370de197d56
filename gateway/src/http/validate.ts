import { z } from 'zod';
import { ApiError } from '../../../core/errors/index.js';
import { repeatedQueryParam } from './repeated-header.js';

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
  // A required top-level field that is absent is "missing" whatever the field's schema is (a union
  // such as embeddings' `input` reports invalid_union, not invalid_type): one rule on every interface.
  const missing = issue.path.length === 1 && (body as Record<string, unknown>)[String(issue.path[0])] === undefined;
  const top = pathOf(issue.path);
  if (missing && top === 'model') throw new ApiError('missing_model', { param: top, humanMessage: 'The "model" field is required' });
  if (missing) throw new ApiError('missing_fields', { param: top, humanMessage: `The "${top}" field is required` });
  const { path, message } = explained(issue);
  const param = pathOf(path);
  throw new ApiError('validation_error', { param, humanMessage: `Invalid value for "${param}": ${message}` });
}

/**
 * Validates a query string against a schema, as validateBody does a body; a parameter given more
 * than once (`limit=2&limit=3`) is refused as such, not as the array it parsed into.
 */
export function validateQuery<S extends z.ZodType>(schema: S, query: unknown): z.infer<S> {
  const repeated = repeatedQueryParam(query);
  if (repeated !== undefined)
    throw new ApiError('validation_error', {
      param: repeated,
      humanMessage: `The "${repeated}" query parameter was given more than once; give it once`,
    });
  return validateBody(schema, query);
}

/**
 * What is wrong, said as precisely as the schema knows it. A field that may take several shapes
 * (`stop`: a string or a list; `content`: text or blocks) failed every one, and zod says only
 * "Invalid input" — the outside probe's complaint. The shape the value came closest to explains
 * it: the one whose problem lies deepest, or that had the right type but broke a rule (a list too
 * long); when the value had none of the types, the types it could have had.
 */
function explained(issue: z.core.$ZodIssue): { path: readonly PropertyKey[]; message: string } {
  if (issue.code !== 'invalid_union' || issue.errors.length === 0) return { path: issue.path, message: issue.message };
  const firsts = issue.errors.map((branch) => branch[0]).filter((i): i is z.core.$ZodIssue => i !== undefined);
  const closeness = (i: z.core.$ZodIssue) => i.path.length * 2 + (i.code === 'invalid_type' ? 0 : 1);
  const closest = firsts.reduce<z.core.$ZodIssue | undefined>((best, i) => (!best || closeness(i) > closeness(best) ? i : best), undefined);
  if (closest && closeness(closest) > 0) {
    const inner = explained(closest);
    return { path: [...issue.path, ...inner.path], message: inner.message };
  }
  const types = [...new Set(firsts.flatMap((i) => (i.code === 'invalid_type' ? [String(i.expected)] : [])))];
  return { path: issue.path, message: types.length > 1 ? `expected ${types.join(' or ')}` : issue.message };
}

/**
 * A request's `model`: a catalogue model id (at most 200 characters, core/config/catalogue.ts) or
 * an alias. A longer one can name no model, and would otherwise travel into the request log and
 * the audit record as the client sent it.
 */
export const modelIdField = z.string().min(1).max(200, 'must be a model id of at most 200 characters');
