import { ApiError } from '../../../core/errors/index.js';
import { credentialKindOf, digestsEqual, secretDigest, type KeyRecord } from '../../../core/keys/index.js';
import { sentMoreThanOnce, type RequestHeaders } from '../http/repeated-header.js';
import type { KeyDirectory } from './key-directory.js';

/** Who is calling: a key (inference) or the root admin (management). */
export type Caller = { kind: 'key'; key: KeyRecord } | { kind: 'admin' };

/** Where a route accepts credentials from; `x-api-key` only where docs/spec-conformance.md 5.2 allows it. */
export interface CredentialSources {
  xApiKey: boolean;
}

/** What authentication reads of a request: its headers, and the raw list to see repeats. */
export type PresentedRequest = RequestHeaders;

/** The presented secret, from `Authorization: Bearer` or (where allowed) `x-api-key`. */
export function presentedSecret({ headers, rawHeaders }: PresentedRequest, sources: CredentialSources): string | undefined {
  const authorization = headers.authorization;
  // Node keeps the first of two Authorization headers and drops the other (and joins two x-api-key
  // headers with a comma): which one pays is not for the gateway to guess.
  if (authorization !== undefined && sentMoreThanOnce(rawHeaders, 'authorization'))
    throw new ApiError('invalid_api_key', { humanMessage: 'The Authorization header was sent more than once; send one' });
  // Read only where it counts (the Anthropic interface and the models list).
  const xApiKey = sources.xApiKey ? headerKey(headers['x-api-key']) : undefined;
  if (xApiKey?.includes(',') && sentMoreThanOnce(rawHeaders, 'x-api-key'))
    throw new ApiError('invalid_api_key', { humanMessage: 'The x-api-key header was sent more than once; send one' });
  if (authorization) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (!match) {
      throw new ApiError('invalid_api_key', { humanMessage: 'The Authorization header must be "Bearer <API key>"' });
    }
    // Two different keys: which one pays is not for the gateway to guess.
    if (xApiKey !== undefined && xApiKey !== match[1])
      throw new ApiError('invalid_api_key', {
        humanMessage: 'Two different API keys were sent, in Authorization and in x-api-key; send one',
      });
    return match[1];
  }
  return xApiKey;
}

/** An `x-api-key` header's key, trimmed; undefined when absent or blank. */
function headerKey(value: string | string[] | undefined): string | undefined {
  const key = typeof value === 'string' ? value.trim() : '';
  return key === '' ? undefined : key;
}

/** Resolves the caller for a request or throws missing_api_key / invalid_api_key / expired_api_key. */
export async function authenticate(
  request: PresentedRequest,
  sources: CredentialSources,
  deps: { pepper: string; /** The admin key's HMAC as bytes (decoded once by the caller). */ adminDigest: Buffer; keys: KeyDirectory },
): Promise<Caller> {
  const secret = presentedSecret(request, sources);
  if (secret === undefined) {
    const headers = request.headers;
    throw new ApiError('missing_api_key', {
      humanMessage: sources.xApiKey
        ? 'No API key was provided; send "Authorization: Bearer <API key>" or "x-api-key: <API key>"'
        : headers['x-api-key'] !== undefined
          ? 'No API key was provided in Authorization; this endpoint does not read x-api-key (only /v1/messages and /v1/models do): send "Authorization: Bearer <API key>"'
          : 'No API key was provided; send "Authorization: Bearer <API key>"',
    });
  }
  const digest = secretDigest(secret, deps.pepper);
  // Every secret is compared with the admin key's: SVC_ADMIN_KEY need not carry the admin prefix.
  const isAdmin = digestsEqual(digest, deps.adminDigest);
  if (isAdmin) return { kind: 'admin' };
  if (credentialKindOf(secret) === 'admin') throw new ApiError('invalid_api_key');
  // Secrets without one of our prefixes cannot be ours: answer without any look-up.
  if (credentialKindOf(secret) === undefined) {
    throw new ApiError('invalid_api_key', { humanMessage: 'The API key is not valid; keys start with "svc-sk-" or "svc_"' });
  }
  const key = await deps.keys.find(digest.toString('hex'));
  if (!key) throw new ApiError('invalid_api_key');
  if (key.ownerInactive && key.status !== 'revoked')
    throw new ApiError('account_status', {
      humanMessage: `The account that owns this API key is ${key.ownerInactive}; ask its administrator to reactivate it`,
    });
  switch (key.status) {
    case 'active':
      return { kind: 'key', key };
    case 'revoked':
      throw new ApiError('expired_api_key', { humanMessage: 'This API key has been revoked' });
    case 'suspended':
      throw new ApiError('account_status', { humanMessage: 'This API key is suspended; ask its administrator to reactivate it' });
    default: {
      const unreachable: never = key.status;
      throw new Error(`unknown key status ${String(unreachable)}`);
    }
  }
}
