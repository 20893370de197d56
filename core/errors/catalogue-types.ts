// Shapes shared by the per-group catalogue files and the merged catalogue. Kept apart from
// catalogue.ts so the group files can type their data without importing the merge.

/** Which action group of the catalogue (docs/errors.md) a code belongs to; `special` is the table of codes with their own action. */
export type ErrorGroup = 'special' | 'A' | 'B' | 'C' | 'D';

/**
 * The `error.type` vocabulary. It is Anthropic's, because the Anthropic SDK only recognises
 * these names and the OpenAI SDK treats `type` as free text, so one value serves both families.
 */
export type ErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'request_too_large'
  | 'rate_limit_error'
  | 'billing_error'
  | 'api_error'
  | 'overloaded_error'
  | 'timeout_error';

/**
 * One code as written in a group file. Only what differs from the group default is written:
 * `type` comes from the status, `retryable` and `action` from the group, unless overridden.
 */
export interface CatalogueEntry {
  /** HTTP status we chose for the code (the API fixes only `billing_limit_reached`, docs/spec-conformance.md 7.4). */
  readonly status: number;
  /** Default user-facing text; never contains the code itself. */
  readonly message: string;
  /** Overrides the group default (B retryable, others not). */
  readonly retryable?: boolean;
  /** Overrides the type derived from the status; use only when the status-derived type misleads. */
  readonly type?: ErrorType;
  /** Overrides the group action text; every `special` code carries its own (docs/errors.md, codes with a specific action). */
  readonly action?: string;
}

/** A group file's data: the codes of one group plus the group's shared action and retry default. */
export interface CatalogueGroup<Entries extends Readonly<Record<string, CatalogueEntry>>> {
  readonly group: ErrorGroup;
  /** Action text of the group (docs/errors.md), used for every entry without its own; `special` has none. */
  readonly action?: string;
  /** Retry default for entries that do not say. */
  readonly retryable: boolean;
  readonly entries: Entries;
}
