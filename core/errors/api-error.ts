// The error every layer throws and every interface renders. It carries the catalogue's decision
// (status, type, retry advice) so the renderers never choose again.
import { errorDefinition, errorTypeForStatus, isErrorCode, type ErrorCode, type ErrorType } from './catalogue.js';
import { toWellFormed } from '../text/well-formed.js';
import { outageMessages, outageSource } from './dependency-outage.js';
import { foreignCodes, type ForeignCode } from './foreign-codes.js';

/** Per-occurrence detail layered over a catalogue code's defaults. */
export interface ApiErrorOptions {
  /** Replaces the catalogue's default human message with something specific to this request. */
  humanMessage?: string;
  /** The request field at fault, for clients that highlight it. */
  param?: string;
  /** The underlying failure; kept for logs, never rendered. */
  cause?: unknown;
  /** Sent as `Retry-After` and `retry_after_seconds`. */
  retryAfterSeconds?: number;
  /** Structured, caller-safe facts the human message summarises (group A's "param/detail fields", docs/errors.md). */
  details?: Record<string, unknown>;
  /** Overrides the catalogue status when the actual response status differs (docs/spec-conformance.md 7.6). */
  status?: number;
  /**
   * Overrides the catalogue's retry advice when this failure knows better: a stream that broke
   * before anything was generated or sent is as safe to retry as a refused request.
   */
  retryable?: boolean;
}

// Lets fromProvider build an error whose code is outside the catalogue while the public
// constructor stays typed to catalogue codes. The symbol is module-private, so nothing outside
// this file can produce a ProviderInit.
const providerInit: unique symbol = Symbol('providerInit');
interface ProviderInit {
  readonly [providerInit]: true;
  readonly code: string;
  readonly status: number;
  readonly humanMessage: string;
}

/**
 * Longest text an error carries from its occasion (a model id, a field name, a supplier's own
 * message): errors quote the client's input, and a 2 MB model id must not come back as a 4 MB
 * answer — nor go to the logs whole.
 */
export const maxErrorTextChars = 1_000;

/** Longest code a provider's error keeps (catalogue codes are at most ~40 characters). */
const maxProviderCodeChars = 100;

/** `text` cut to `maxErrorTextChars` (never inside a surrogate pair), saying how much was left out. */
export function clipErrorText(text: string): string {
  if (text.length <= maxErrorTextChars) return text;
  let end = maxErrorTextChars;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return `${text.slice(0, end)}… (${text.length - end} more characters)`;
}

/** Details with their text values clipped (the only values that can grow with the input). */
function clipDetails(details: Record<string, unknown>): Record<string, unknown> {
  let clipped: Record<string, unknown> | undefined;
  for (const [name, value] of Object.entries(details)) {
    if (typeof value === 'string' && value.length > maxErrorTextChars) (clipped ??= { ...details })[name] = clipErrorText(value);
  }
  return clipped ?? details;
}

/** True for statuses that say "the same request may succeed later": rate limits and server-side failures. */
function isRetryableStatus(status: number): boolean {
  return status === 429 || status >= 500;
}

/** A catalogue (or provider) error: `message` is the formatted `<code> - <human_message>` (docs/spec-conformance.md 7.3). */
export class ApiError extends Error {
  readonly code: string;
  readonly status: number;
  readonly type: ErrorType;
  readonly humanMessage: string;
  readonly param?: string;
  readonly retryAfterSeconds?: number;
  readonly retryable: boolean;
  readonly details?: Record<string, unknown>;

  constructor(code: ErrorCode, options?: ApiErrorOptions);
  constructor(init: ProviderInit, options?: ApiErrorOptions);
  constructor(codeOrInit: ErrorCode | ProviderInit, options: ApiErrorOptions = {}) {
    const resolved =
      typeof codeOrInit === 'string' ? ApiError.resolveCatalogueCode(codeOrInit, options) : ApiError.resolveProvider(codeOrInit);
    resolved.humanMessage = clipErrorText(resolved.humanMessage);
    // A client error's stack is never logged (only 5xx are, with their cause), and V8 walks the
    // request pipeline's deep asynchronous stack to capture one: the profile of a flood of 400s
    // put ~15 % of the serving thread in this constructor. So 4xx errors are made without stack
    // frames; 5xx keep theirs (docs/observability.md, Logs).
    const stackTraceLimit = Error.stackTraceLimit;
    if (resolved.status < 500) Error.stackTraceLimit = 0;
    // Only pass `cause` when there is one, so `'cause' in err` stays meaningful.
    super(`${resolved.code} - ${resolved.humanMessage}`, options.cause === undefined ? undefined : { cause: options.cause });
    Error.stackTraceLimit = stackTraceLimit;
    this.name = 'ApiError';
    this.code = resolved.code;
    this.status = resolved.status;
    this.type = resolved.type;
    this.humanMessage = resolved.humanMessage;
    this.retryable = resolved.retryable;
    if (options.param !== undefined) this.param = clipErrorText(options.param);
    if (options.retryAfterSeconds !== undefined) this.retryAfterSeconds = options.retryAfterSeconds;
    if (options.details !== undefined) this.details = clipDetails(options.details);
  }

  /**
   * The same failure as reported inside a stream that already sent output: never retryable, since
   * repeating the call repeats (and is charged for) what was generated (docs/errors.md). A
   * `provider_timeout` before the first byte is safe to retry; one in the middle of an answer is not.
   */
  afterOutput(): ApiError {
    return this.withRetryable(false);
  }

  /** The same failure with other retry advice (`retryable`, `x-should-retry`); this one is unchanged. */
  withRetryable(retryable: boolean): ApiError {
    if (this.retryable === retryable) return this;
    const copy = Object.create(Object.getPrototypeOf(this) as object) as ApiError;
    Object.defineProperties(copy, Object.getOwnPropertyDescriptors(this));
    Object.defineProperty(copy, 'retryable', { value: retryable, enumerable: true });
    return copy;
  }

  /**
   * An error carrying a provider's own code (possibly a numeric JSON-RPC code) unchanged, as
   * docs/spec-conformance.md 7.5 requires; type and retry advice follow the status since the catalogue has no entry.
   */
  static fromProvider(
    code: string,
    status: number,
    humanMessage: string,
    options: Omit<ApiErrorOptions, 'status' | 'humanMessage'> = {},
  ): ApiError {
    return new ApiError({ [providerInit]: true, code, status, humanMessage }, options);
  }

  /**
   * An error with a code of another API that the gateway produces itself (foreign-codes.ts, listed
   * in docs/errors.md): status from that list, type and retry advice following it.
   */
  static foreign(code: ForeignCode, humanMessage: string, options: Omit<ApiErrorOptions, 'status' | 'humanMessage'> = {}): ApiError {
    return ApiError.fromProvider(code, foreignCodes[code].status, humanMessage, options);
  }

  private static resolveCatalogueCode(code: ErrorCode, options: ApiErrorOptions) {
    const definition = errorDefinition(code);
    const status = options.status ?? definition.status;
    return {
      code,
      status,
      // An overridden status brings its own type, so the SDK class and `type` keep agreeing.
      type: options.status === undefined ? definition.type : errorTypeForStatus(status),
      humanMessage: options.humanMessage ?? definition.message,
      retryable: options.retryable ?? definition.retryable,
    };
  }

  private static resolveProvider(init: ProviderInit) {
    // A provider's code is an identifier; a 5,000-character one is garbage, kept short in the answer and the audit log.
    const code = init.code.length > maxProviderCodeChars ? init.code.slice(0, maxProviderCodeChars) : init.code;
    // An error must travel with an error status; a provider that reported failure with a 2xx
    // (or nothing usable) is a bad upstream answer from the client's point of view.
    const status = Number.isInteger(init.status) && init.status >= 400 && init.status <= 599 ? init.status : 502;
    return {
      code,
      status,
      type: errorTypeForStatus(status),
      humanMessage: init.humanMessage,
      retryable: isRetryableStatus(status),
    };
  }
}

/**
 * The error body both SDK families accept: the OpenAI SDK reads `error.{message,type,param,code}`,
 * the Anthropic SDK reads `type === 'error'` and `error.{type,message}`.
 */
export interface ErrorBody {
  type: 'error';
  error: {
    code: string;
    type: ErrorType;
    message: string;
    human_message: string;
    param: string | null;
    /** Structured retry advice (docs/spec-conformance.md 7.1), so automation need not parse text. */
    retryable: boolean;
    /**
     * Caller-supplied facts plus `error_code` (the code again): the Anthropic SDK exposes
     * `error.details.error_code` as `err.errorCode`, so its users get the code without parsing.
     */
    details: Record<string, unknown> & { error_code: string };
    request_id?: string;
    retry_after_seconds?: number;
  };
  request_id?: string;
}

/** Renders an ApiError as the JSON body every interface sends. */
export function renderErrorBody(error: ApiError, requestId?: string): ErrorBody {
  const body: ErrorBody = {
    type: 'error',
    error: {
      code: error.code,
      type: error.type,
      message: toWellFormed(error.message),
      human_message: toWellFormed(error.humanMessage),
      param: error.param === undefined ? null : toWellFormed(error.param),
      retryable: error.retryable,
      // error_code last so caller details cannot disguise the code.
      details: { ...wellFormedValues(error.details), error_code: error.code },
    },
  };
  if (error.retryAfterSeconds !== undefined) body.error.retry_after_seconds = error.retryAfterSeconds;
  // Both places: the Anthropic SDK reads it at the top level, OpenAI-style clients inside `error`.
  if (requestId !== undefined) {
    body.error.request_id = requestId;
    body.request_id = requestId;
  }
  return body;
}

/**
 * Text an error quotes from the request (a field name, a model id) is made well-formed (each lone
 * UTF-16 surrogate replaced by U+FFFD): JSON.stringify writes a lone surrogate as an escape that
 * strict parsers (jq, Python's json) refuse, and a refusal of invalid text must itself be valid
 * text. This does it through the details' nested values (a validation error's `detail[].msg` and `loc`).
 */
function wellFormedValues<T>(value: T): T {
  if (typeof value === 'string') return toWellFormed(value) as T;
  if (Array.isArray(value)) return value.map(wellFormedValues) as T;
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [toWellFormed(k), wellFormedValues(v)])) as T;
  return value;
}

/**
 * Response headers that carry the retry decision. Both SDKs obey `x-should-retry` over their own
 * status rules; without it they would auto-retry 409 and 5xx codes the API says not to repeat (docs/spec-conformance.md 7.2).
 */
export function errorResponseHeaders(error: ApiError): Record<string, string> {
  const headers: Record<string, string> = { 'x-should-retry': String(error.retryable) };
  if (error.retryAfterSeconds !== undefined) headers['retry-after'] = String(Math.max(0, Math.ceil(error.retryAfterSeconds)));
  return headers;
}

/**
 * Any thrown value as an ApiError. Unknown failures become `internal_error` with the original as
 * `cause`: their text may hold internals (hosts, SQL, keys), so it never reaches the client.
 */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  // A store or database outage is a dependency being down: 503, worth retrying, not a bug.
  const outage = outageSource(err);
  if (outage) return new ApiError('service_unavailable', { humanMessage: outageMessages[outage], retryAfterSeconds: 2, cause: err });
  return new ApiError('internal_error', { cause: err });
}

/**
 * Splits a formatted `<code> - <human_message>` (docs/spec-conformance.md 7.3): at the first ` - ` only,
 * and only when the prefix is a catalogue code, since human text may itself contain ` - `.
 */
export function splitFormattedMessage(message: string): { code: string; humanMessage: string } | undefined {
  const separator = message.indexOf(' - ');
  if (separator < 0) return undefined;
  const code = message.slice(0, separator);
  if (!isErrorCode(code)) return undefined;
  return { code, humanMessage: message.slice(separator + 3) };
}
