// The whole error catalogue (docs/errors.md; docs/spec-conformance.md §7), merged from the
// per-group data files into one lookup. Types, retry defaults and actions are resolved here once so every interface renders
// the same thing for the same code.
import { groupAErrors } from './catalogue-group-a.js';
import { groupBErrors } from './catalogue-group-b.js';
import { groupCErrors } from './catalogue-group-c.js';
import { groupDErrors } from './catalogue-group-d.js';
import { specialErrors } from './catalogue-special.js';
import type { CatalogueEntry, ErrorGroup, ErrorType } from './catalogue-types.js';

export type { ErrorGroup, ErrorType } from './catalogue-types.js';

type SpecialCode = keyof typeof specialErrors.entries;
type GroupACode = keyof typeof groupAErrors.entries;
type GroupBCode = keyof typeof groupBErrors.entries;
type GroupCCode = keyof typeof groupCErrors.entries;
type GroupDCode = keyof typeof groupDErrors.entries;

/** Every code the catalogue knows, as a literal union taken from the data. */
export type ErrorCode = SpecialCode | GroupACode | GroupBCode | GroupCCode | GroupDCode;

// Compile-time guard that no code sits in two groups; the test checks the same at run time.
type Overlap =
  | (SpecialCode & (GroupACode | GroupBCode | GroupCCode | GroupDCode))
  | (GroupACode & (GroupBCode | GroupCCode | GroupDCode))
  | (GroupBCode & (GroupCCode | GroupDCode))
  | (GroupCCode & GroupDCode);
const noCodeInTwoGroups: [Overlap] extends [never] ? true : Overlap = true;
void noCodeInTwoGroups;

/** A code fully resolved: what an interface needs to render it and a client needs to act on it. */
export interface ErrorDefinition {
  readonly code: ErrorCode;
  readonly group: ErrorGroup;
  readonly status: number;
  readonly type: ErrorType;
  readonly retryable: boolean;
  readonly message: string;
  readonly action: string;
}

/** The group data files in the API's order (A, B, C, D, then the special codes); exported for the docs and the drift tests. */
export const catalogueGroups = [specialErrors, groupAErrors, groupBErrors, groupCErrors, groupDErrors] as const;

/**
 * Statuses an error is answered with besides its catalogue status: what Node's HTTP server or
 * the router refuse before a route runs (gateway/src/http/client-errors.ts, render-error.ts) —
 * a request that did not arrive in time (408), a path segment (414) or headers (431) too large.
 */
export const frameworkStatuses: readonly number[] = [408, 414, 431];

/**
 * The one place an HTTP status becomes an error type. Both SDK families pick their exception
 * class from the status, so the type only has to agree with it.
 */
export function errorTypeForStatus(status: number): ErrorType {
  switch (status) {
    case 401:
      return 'authentication_error';
    case 402:
      return 'billing_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 408:
    case 504:
      return 'timeout_error';
    // Size caps: the body (413), the path (414), the request line and headers (431).
    case 413:
    case 414:
    case 431:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    // 529 is Anthropic's own "overloaded" status; providers relay it.
    case 503:
    case 529:
      return 'overloaded_error';
  }
  // Everything else in 4xx (400, 405, 409, 415, 422, ...) is a request the caller must change.
  return status >= 400 && status < 500 ? 'invalid_request_error' : 'api_error';
}

function resolveCatalogue(): Readonly<Record<ErrorCode, ErrorDefinition>> {
  const resolved: Record<string, ErrorDefinition> = {};
  for (const group of catalogueGroups) {
    const entries: Readonly<Record<string, CatalogueEntry>> = group.entries;
    for (const [code, entry] of Object.entries(entries)) {
      const action = entry.action ?? ('action' in group ? group.action : undefined);
      if (action === undefined) throw new Error(`error catalogue: ${code} has no action text`);
      resolved[code] = Object.freeze({
        code: code as ErrorCode,
        group: group.group,
        status: entry.status,
        type: entry.type ?? errorTypeForStatus(entry.status),
        retryable: entry.retryable ?? group.retryable,
        message: entry.message,
        action,
      });
    }
  }
  // The keys were copied from data typed by ErrorCode, so the record is complete.
  return Object.freeze(resolved) as Readonly<Record<ErrorCode, ErrorDefinition>>;
}

/** Every catalogue code with its chosen status, type, retry advice, message and action. */
export const errorCatalogue: Readonly<Record<ErrorCode, ErrorDefinition>> = resolveCatalogue();

/** True when the string is a catalogue code (own property, so `toString` and friends are not codes). */
export function isErrorCode(code: string): code is ErrorCode {
  return Object.hasOwn(errorCatalogue, code);
}

/** The resolved definition of a catalogue code. */
export function errorDefinition(code: ErrorCode): ErrorDefinition {
  return errorCatalogue[code];
}
