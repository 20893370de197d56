// zod at the edge: path, query and body are checked before any handler runs, and a failure is
// one 422 naming each parameter, where it was and what was expected (docs/portal.md).
import type { NextFunction, Request, Response } from 'express';
import { hasDirectionControls, hasVisibleCharacter, isStorableText } from '../../../core/text/well-formed.js';
import { z } from 'zod';
import { ApiError } from '../../../core/errors/index.js';
import { hasAtMostDecimals } from '../../../core/budget/usage.js';

/** One failing parameter in a validation body. */
export interface ValidationIssue {
  /** Where the parameter was (`path`, `query`, `body`) and its name (nested fields follow). */
  loc: (string | number)[];
  /** What was expected, in words. */
  msg: string;
  /** zod's issue code: `invalid_type`, `too_big`, `invalid_format`… */
  type: string;
}

/** The schemas of one route; absent parts are not checked. */
export interface RouteSchemas<P extends z.ZodType, Q extends z.ZodType, B extends z.ZodType> {
  params?: P;
  query?: Q;
  body?: B;
}

/** The validated values a handler reads (`req.valid`). */
export interface Valid {
  params: Record<string, unknown>;
  query: Record<string, unknown>;
  body: Record<string, unknown>;
}

declare module 'express-serve-static-core' {
  interface Request {
    /** Set by validate(): the parsed, typed input of the route. */
    valid?: Valid;
  }
}

/** Issues of one failed parse, located. */
function locate(where: 'path' | 'query' | 'body', error: z.ZodError): ValidationIssue[] {
  return error.issues.map((issue) => ({
    loc: [where, ...issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p))],
    msg: issue.message,
    type: issue.code,
  }));
}

/** What a type is called in a message ("must be a number"). */
const typeNames: Record<string, string> = {
  string: 'text',
  number: 'a number',
  int: 'a whole number',
  boolean: 'true or false',
  array: 'a list',
  object: 'an object',
  null: 'null',
};

/** "1 character", "3 items": a count and its unit. */
const counted = (n: number | bigint, unit: string) => `${String(n)} ${unit}${Number(n) === 1 ? '' : 's'}`;

/**
 * The portal's words for an issue whose schema gave no message of its own (zod asks only then):
 * what the field must be, for people reading it beside a form field, instead of zod's
 * "Invalid input: expected number, received string". Undefined keeps zod's wording.
 */
export function plainError(issue: z.core.$ZodRawIssue): string | undefined {
  switch (issue.code) {
    case 'invalid_type':
      return issue.input === undefined ? 'is required' : `must be ${typeNames[issue.expected] ?? issue.expected}`;
    case 'too_big':
    case 'too_small': {
      const big = issue.code === 'too_big';
      const bound = big ? issue.maximum : issue.minimum;
      const origin = issue.origin as string;
      if (!big && origin === 'string' && Number(bound) === 1) return 'must not be empty';
      const words = issue.inclusive === false ? (big ? 'less than' : 'more than') : big ? 'at most' : 'at least';
      const amount =
        origin === 'string' ? counted(bound, 'character') : origin === 'array' || origin === 'set' ? counted(bound, 'item') : String(bound);
      return `must be ${words} ${amount}`;
    }
    case 'invalid_value':
      return issue.values.length === 1
        ? `must be ${JSON.stringify(issue.values[0])}`
        : `must be one of ${issue.values.map(String).join(', ')}`;
    case 'invalid_union': {
      // Said by a branch that took the value's type: the nearest miss. Not by the branch that lets
      // a form field be left empty (`z.literal('')`): "must be \"\"" answered a days of 1.5.
      const inner = (issue.errors as z.core.$ZodIssue[][])
        .flat()
        .filter((i) => !(i.code === 'invalid_value' && i.values.length === 1 && i.values[0] === ''));
      const said = (inner.find((i) => i.code !== 'invalid_type') ?? inner.find((i) => i.code === 'invalid_type' && i.expected === 'int'))
        ?.message;
      return said ?? 'is not a value this field takes';
    }
    case 'invalid_format':
      return issue.format === 'regex' ? `must match the pattern ${String(issue.pattern)}` : `must be a valid ${issue.format}`;
    case 'unrecognized_keys':
      return `has ${issue.keys.length === 1 ? 'a field' : 'fields'} it does not take: ${issue.keys.join(', ')}`;
    case 'custom':
      return 'is not a value this field takes';
    default:
      return undefined;
  }
}

/** Options of every parse of people's input: zod's default wording in the portal's words. */
export const inPlainWords = { error: plainError } as const;

/** The 422 for a list of issues; the first names `param` for clients that highlight one field. */
export function validationError(issues: ValidationIssue[], options: { humanMessage?: string; cause?: unknown } = {}): ApiError {
  const first = issues[0];
  const names = [...new Set(issues.map((i) => i.loc.slice(1).join('.') || i.loc[0]))].join(', ');
  return new ApiError('validation_error', {
    status: 422,
    humanMessage: options.humanMessage ?? `Some input is not valid: ${names}`,
    ...(first ? { param: first.loc.slice(1).join('.') } : {}),
    details: { detail: issues },
    ...(options.cause !== undefined && { cause: options.cause }),
  });
}

/**
 * A query without its blank parameters: a filter form sends every field, `?status=&model=` for
 * "any", so a blank query parameter is one not given (it took the form's defaults to a 422 page).
 */
function withoutBlanks(query: Record<string, unknown>): Record<string, unknown> {
  let kept: Record<string, unknown> | undefined;
  for (const [name, value] of Object.entries(query)) {
    if (value !== '') continue;
    kept ??= { ...query };
    delete kept[name];
  }
  return kept ?? query;
}

/** Middleware checking the route's params, query and body; handlers read `req.valid`. */
export function validate<P extends z.ZodType, Q extends z.ZodType, B extends z.ZodType>(schemas: RouteSchemas<P, Q, B>) {
  return (req: Request, _res: Response, next: NextFunction): void => {
    const issues: ValidationIssue[] = [];
    const valid: Valid = { params: {}, query: {}, body: {} };
    const parts = [
      ['path', schemas.params, req.params, 'params'],
      ['query', schemas.query, withoutBlanks(req.query as Record<string, unknown>), 'query'],
      ['body', schemas.body, req.body ?? {}, 'body'],
    ] as const;
    for (const [where, schema, input, key] of parts) {
      if (!schema) continue;
      const result = schema.safeParse(input, inPlainWords);
      if (result.success) valid[key] = result.data as Record<string, unknown>;
      else issues.push(...locate(where, result.error));
    }
    if (issues.length > 0) return next(validationError(issues));
    req.valid = valid;
    next();
  };
}

/**
 * For a page that takes no query parameter: any is `422` naming the query (as the keys page's
 * strict query does), never ignored as if it had narrowed what the page shows.
 */
export const noQuery = validate({ query: z.strictObject({}) });

/**
 * The largest id of a row in the portal's tables (PostgreSQL `integer`): a larger one names
 * nothing that can exist, and comparing it with such a column fails in the database.
 */
export const maxRowId = 2_147_483_647;

/** A row id as text (a path or query parameter, a form field): a positive integer up to `maxRowId`. */
export const rowIdText = (message = 'must be a positive integer') =>
  z
    .string()
    .regex(/^[1-9][0-9]{0,9}$/, message)
    .transform(Number)
    .refine((id) => id <= maxRowId, `${message} up to ${maxRowId}`);

/** A path id that must be a positive integer (`*_id` parameters of the portal). */
export const integerId = rowIdText();

/** The request log's ids (the audit log's bigint sequence): a positive integer JavaScript holds exactly. */
export const sequenceId = z
  .string()
  .regex(/^[1-9][0-9]{0,15}$/, 'must be a positive integer')
  .transform(Number)
  .refine((id) => Number.isSafeInteger(id), 'must be a positive integer of at most 15 digits');

/** A query string value given at most once (a repeated parameter is refused, not guessed). */
export const singleString = (max: number) =>
  z
    .string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be given once, as text') })
    .max(max, `must be at most ${max} characters`);

/**
 * A query parameter that is a whole number from 1 to `max`, given once: `limit`, `days`. `unit`
 * names what is counted in the message ("days" → "must be a whole number of days from 1 to 90").
 */
export const wholeNumberParam = (max: number, unit?: string) => {
  const message = `must be a whole number ${unit ? `of ${unit} ` : ''}from 1 to ${max}`;
  // One message for every way of missing (not digits, 0, too many digits, above max).
  return singleString(40)
    .regex(/^[1-9][0-9]{0,14}$/, message)
    .transform(Number)
    .refine((n) => n <= max, message);
};

/**
 * Parses a request body against `schema`, throwing the 422 validation error on failure. `sent`:
 * the client's own body when `body` is it merged over stored values (a partial update).
 */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown, sent: unknown = body): z.infer<S> {
  // Checked here, inside the handler, rather than before every route: a form refused for it is
  // shown again with the problem beside the field (withFormPage), not on an error page. Only what
  // the client sent (`sent`): an update merged over stored values is not refused for a name it left alone.
  const unreadable = unreadableNameIn(sent);
  if (unreadable) throw validationError([{ loc: ['body', unreadable.field], msg: unreadable.msg, type: 'string_pattern_mismatch' }]);
  const result = schema.safeParse(body ?? {}, inPlainWords);
  if (!result.success) throw validationError(locate('body', result.error));
  return result.data;
}

/**
 * An amount in US dollars with at most `places` decimals (what its column keeps: finer would be
 * stored rounded — 0.0000001 as 0), as a JSON number or plain decimal form text (no `0x10`,
 * `1e3`), at most 1,000,000,000; empty or null for "none".
 */
export const usdAmountOrNoneUpTo = (places: number) => {
  const message = `must be an amount in US dollars (up to ${places} decimals), or empty for none`;
  return z.union(
    [
      z
        .number()
        .nonnegative(message)
        .max(1_000_000_000, 'must be at most 1,000,000,000')
        .refine((n) => hasAtMostDecimals(n, places), message),
      z
        .string()
        .trim()
        .regex(new RegExp(`^(\\d{1,10}(\\.\\d{1,${places}})?)?$`), message)
        .transform((v) => (v === '' ? null : Number(v)))
        .refine((n) => n === null || n <= 1_000_000_000, 'must be at most 1,000,000,000'),
      z.null(),
    ],
    { message },
  );
};

/** An amount in US dollars (up to 6 decimals, the limits' columns) or empty/null for "none". */
export const usdAmountOrNone = usdAmountOrNoneUpTo(6);

/** Where in `value` (a parsed body or query) a string holds unstorable text, as a validation location; undefined when none. */
function unstorableAt(value: unknown, at: (string | number)[], depth = 0): (string | number)[] | undefined {
  if (typeof value === 'string') return !isStorableText(value) ? at : undefined;
  // Parsed bodies are bounded (256 kB) but may nest deeply: deeper than this is not looked into.
  if (depth > 32 || typeof value !== 'object' || value === null) return undefined;
  for (const [key, inner] of Object.entries(value)) {
    if (!isStorableText(key)) return [...at, key];
    const found = unstorableAt(inner, [...at, Array.isArray(value) ? Number(key) : key], depth + 1);
    if (found) return found;
  }
  return undefined;
}

/**
 * Text never holds a NUL character nor half a surrogate pair: PostgreSQL cannot store the one and
 * replaces the other, and no name, filter or setting needs them. One check for every form, JSON
 * body and query string, after the body parsers: 422 naming the field.
 */
export function refuseUnstorableText(req: Request, _res: Response, next: NextFunction): void {
  const where = unstorableAt(req.query, ['query']) ?? unstorableAt(req.body, ['body']);
  if (where)
    return next(
      validationError([
        { loc: where, msg: 'must not contain a NUL character (U+0000) or half a surrogate pair', type: 'string_pattern_mismatch' },
      ]),
    );
  next();
}

/**
 * A name field of the body (`name`, `display_name`, `…_name`: what other people read — in tables,
 * headers, emails) that would not read as written (core/text): direction controls spoof how it
 * reads, and a name of only zero-width or blank characters shows as nothing. An empty or
 * all-spaces one is left to the schema ("must not be empty").
 */
function unreadableNameIn(body: unknown): { field: string; msg: string } | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  for (const [key, value] of Object.entries(body)) {
    if ((key !== 'name' && !key.endsWith('_name')) || typeof value !== 'string') continue;
    if (hasDirectionControls(value))
      return {
        field: key,
        msg: 'must not contain Unicode direction controls (U+202A–U+202E, U+2066–U+2069): they make a name read differently than it is written',
      };
    if (value.trim() !== '' && !hasVisibleCharacter(value))
      return { field: key, msg: 'must hold a visible character: zero-width and blank characters alone show as an empty name' };
  }
  return undefined;
}

/** What the portal's body parsers read (app.ts); the processor's webhook reads its own before them. */
const readBodyTypes = ['application/json', 'application/x-www-form-urlencoded'];

/**
 * A body of another type (text/plain, multipart) is read by no parser: the route would see no
 * fields and answer 200 having changed nothing. 415, saying what to send.
 */
export function refuseUnreadBodies(req: Request, _res: Response, next: NextFunction): void {
  // A body is announced by a length above zero or a chunked transfer (as Node reads requests).
  const length = req.headers['content-length'];
  const hasBody = req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
  if (!hasBody || req.is(readBodyTypes)) return next();
  next(
    new ApiError('unsupported_media_type', {
      humanMessage: 'Send the body as JSON (Content-Type: application/json) or as a form (application/x-www-form-urlencoded)',
    }),
  );
}
