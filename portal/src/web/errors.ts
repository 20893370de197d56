// The one error reporter: every failure a route throws ends here, is logged with the request id,
// counted, and answered as JSON (API callers) or as the error page (browsers).
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';
import { ApiError, errorResponseHeaders, renderErrorBody, toApiError } from '../../../core/errors/index.js';
import { validationError } from './validation.js';

/**
 * Whether the caller wants JSON rather than a page — the portal's one content negotiation: API
 * paths always; otherwise an `Accept` that prefers HTML to JSON is a browser (a page, also for a
 * JSON body: malformed JSON from a page's script asking for HTML gets the error page); else a JSON
 * body, or an `Accept` asking for JSON. Without an `Accept` (or `*` only), a JSON body means JSON
 * and anything else a page.
 */
export function wantsJson(req: Request): boolean {
  if (req.path.startsWith('/api/') || req.path.startsWith('/dashboard/api/')) return true;
  // JSON listed first: a tie (no Accept, */*) goes to JSON, so 'html' means HTML is really preferred.
  if (req.accepts(['json', 'html']) === 'html') return false;
  if (req.is('application/json')) return true;
  return req.accepts(['html', 'json']) === 'json';
}

/**
 * The portal's JSON error body: the platform's catalogue error object under `error`, plus
 * `code`, `message` and `human_message` at the top level (seed part 7.2), and `detail` listing
 * the failing parameters of a validation error.
 */
export function portalErrorBody(error: ApiError, requestId: string): Record<string, unknown> {
  // The top-level copies come from the rendered body, so they carry its well-formed text too.
  const rendered = renderErrorBody(error, requestId);
  const body: Record<string, unknown> = {
    ...rendered,
    code: rendered.error.code,
    message: rendered.error.message,
    human_message: rendered.error.human_message,
  };
  const detail = rendered.error.details?.detail;
  if (detail !== undefined) body.detail = detail;
  return body;
}

/** Sends `error` negotiated as JSON or the error page. */
export function sendError(req: Request, res: Response, error: ApiError, logger?: Logger): void {
  res.status(error.status).set(errorResponseHeaders(error));
  // The request's span names the catalogue code as its error.type (web/trace.ts).
  res.locals.errorCode = error.code;
  if (wantsJson(req)) {
    res.json(portalErrorBody(error, res.locals.requestId as string));
    return;
  }
  const detail = (error.details?.detail as { loc: (string | number)[]; msg: string }[] | undefined) ?? [];
  res.render(
    'errors/error',
    {
      title: error.status === 404 ? 'Page not found' : 'Something needs attention',
      status: error.status,
      code: error.code,
      // The fields a validation message names, in the words the list below uses.
      humanMessage: detail
        .filter((d) => d.loc.length > 1)
        .reduce((text, d) => text.replaceAll(d.loc.slice(1).join('.'), fieldWords(d.loc.slice(1))), error.humanMessage),
      issues: detail.map((d) => ({ name: fieldWords(d.loc.slice(1)), where: whereWords[String(d.loc[0])] ?? '', msg: d.msg })),
      formPage: refusedFormPage(req, error),
    },
    (renderError, html) => {
      if (!renderError) return void res.send(html);
      // The page itself failed: a plain answer with the error's words, never the template's stack.
      logger?.error({ err: renderError, request_id: res.locals.requestId }, 'error page failed to render');
      res.type('text/plain').send(`${error.code} - ${error.humanMessage}\n`);
    },
  );
}

/** A field as people read it: `monthly_budget` is "monthly budget", `items.2.name` "items 2 name". */
function fieldWords(path: (string | number)[]): string {
  return path.map((part) => String(part).replace(/_/g, ' ')).join(' ');
}

/** Where a refused value was, said only when it was not the form's own fields. */
const whereWords: Record<string, string> = { query: 'in the address', params: 'in the address', path: 'in the address' };

/**
 * The page a refused form was sent from (its Referer, same origin only), for the error page's
 * "Back to the form" — which goes back in the history, keeping what was typed. Only for a form
 * post refused for what was in it (4xx other than a missing session or permission).
 */
function refusedFormPage(req: Request, error: ApiError): string | undefined {
  if (req.method !== 'POST' || error.status < 400 || error.status >= 500 || error.status === 401 || error.status === 403) return undefined;
  const referer = req.get('referer');
  if (!referer) return undefined;
  try {
    const from = new URL(referer);
    // The form's origin passed the portal's same-origin check (csrf) as the Origin header.
    const origin = req.get('origin') ?? `${req.protocol}://${req.get('host') ?? ''}`;
    return from.origin === origin ? from.pathname + from.search : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A value PostgreSQL refused as data (SQLSTATE class 22: a number out of its column's range, a
 * NUL character in text, a date past the calendar's end): input the routes' validation let
 * through, so the caller's to change — 422, never a 500. Logged, since it names a gap in that
 * validation.
 */
function refusedValue(err: unknown): ApiError | undefined {
  const sqlState = (err as { code?: unknown } | null)?.code;
  if (typeof sqlState !== 'string' || !/^22[0-9A-Z]{3}$/.test(sqlState)) return undefined;
  // Said by its SQLSTATE: the driver's message quotes the statement, which is not the caller's to read.
  const what = refusedValueKinds[sqlState] ?? 'a value is not one the portal can store';
  return validationError([{ loc: ['body'], msg: what, type: 'value_error' }], {
    humanMessage: `A value in the request is outside what the portal can store or compare (${what}): correct it and send it again`,
    cause: err,
  });
}

/** What each common class-22 SQLSTATE means, in the caller's terms. */
const refusedValueKinds: Record<string, string> = {
  '22001': 'a text is longer than its field allows',
  '22003': 'a number is out of range',
  '22007': 'a date or time is not valid',
  '22008': 'a date or time is out of range',
  '22012': 'a number would be divided by zero',
  '22021': 'a text holds a character that cannot be stored',
  '22P02': 'a value is not of the expected type',
  '22P05': 'a text holds a character that cannot be stored',
};

/**
 * A body the parsers (express.json, express.urlencoded) refused, by the kind they name: each its
 * own catalogue code and a sentence saying what to send instead. Other kinds stay the generic 400.
 */
function unreadBody(kind: string, err: unknown): ApiError | undefined {
  const charset = (err as { charset?: unknown }).charset;
  switch (kind) {
    case 'entity.too.large':
    case 'parameters.too.many':
      return new ApiError('request_too_large', { cause: err });
    case 'charset.unsupported':
      return new ApiError('unsupported_media_type', {
        param: 'content-type',
        humanMessage: `The body's charset${typeof charset === 'string' ? ` "${charset.slice(0, 40)}"` : ''} is not one the portal reads: send UTF-8`,
        cause: err,
      });
    case 'encoding.unsupported': {
      const encoding = (err as { encoding?: unknown }).encoding;
      return new ApiError('unsupported_media_type', {
        param: 'content-encoding',
        humanMessage: `The body's Content-Encoding${typeof encoding === 'string' ? ` "${encoding.slice(0, 40)}"` : ''} is not one the portal reads: send it uncompressed, or as gzip, deflate or br`,
        cause: err,
      });
    }
    case 'entity.parse.failed':
      return new ApiError('invalid_json', { humanMessage: 'The request body is not valid JSON', cause: err });
    default:
      // zlib's own failure (Z_DATA_ERROR, Z_BUF_ERROR): the body is not what its Content-Encoding says.
      if (/^Z_/.test(String((err as { code?: unknown }).code)))
        return new ApiError('invalid_request', {
          param: 'content-encoding',
          humanMessage: 'The request body could not be decompressed as its Content-Encoding says',
          cause: err,
        });
      return undefined;
  }
}

/** The last middleware: unknown failures are 500 (logged with their stack), catalogue errors keep their status. */
export function errorHandler(logger: Logger) {
  return (err: unknown, req: Request, res: Response, _next: NextFunction): void => {
    // Body parsers throw http-errors (400 bad JSON, 413 too large): bad input, never a 500.
    const status = (err as { status?: unknown }).status;
    const typed = (err as { type?: unknown }).type;
    const refused = refusedValue(err);
    let error: ApiError;
    const unread = err instanceof ApiError ? undefined : unreadBody(typeof typed === 'string' ? typed : '', err);
    if (err instanceof ApiError) error = err;
    else if (unread) error = unread;
    else if (err instanceof URIError)
      // Express decoding a path parameter: `%ff` is a parameter that is not valid.
      error = validationError([{ loc: ['path'], msg: 'is not valid percent-encoded text', type: 'value_error' }], {
        humanMessage: 'The address holds a percent sign that does not start valid percent-encoded text',
        cause: err,
      });
    else if (typeof status === 'number' && status >= 400 && status < 500)
      error = new ApiError('invalid_request', { status, humanMessage: 'The request body could not be read', cause: err });
    else if (refused) error = refused;
    else error = toApiError(err);
    // The catalogue's own wording names the gateway; a fault here is the portal's.
    if (error.code === 'internal_error' && !(err instanceof ApiError))
      error = new ApiError('internal_error', { humanMessage: 'Something went wrong inside the portal', cause: err });
    if (refused)
      logger.warn(
        { err, requestId: res.locals.requestId, route: req.route?.path },
        'a value the validation let through was refused by the database',
      );
    // 501 is the portal's own deliberate answer (a retired endpoint), not a failure to look into.
    if (error.status >= 500 && error.status !== 501)
      logger.error({ err, requestId: res.locals.requestId, route: req.route?.path }, 'request failed');
    if (res.headersSent) {
      // A streamed answer (a CSV export) failed part-way: end the connection so the client sees an
      // incomplete download, rather than a response that never finishes.
      res.destroy(error);
      return;
    }
    sendError(req, res, error, logger);
  };
}
