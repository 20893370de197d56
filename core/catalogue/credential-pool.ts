// Changing a stored provider's credential pool (docs/administration.md "Providers, models and
// prices"): the admin page sends the whole new pool; each entry names a credential and gives a
// new key (encrypted here), an environment variable, or nothing — keep the key stored under that
// name. What changed is returned as `rotated` events for the token log; keys never leave here.
import { ApiError } from '../errors/index.js';
import type { CredentialEvent } from '../routing/credential-events.js';
import { encryptCredential } from './credentials.js';
import type { StoredCredential } from './repository.js';

/** One entry of the pool as an administrator sends it. */
export interface CredentialInput {
  name: string;
  api_key?: string | undefined;
  api_key_env?: string | undefined;
}

/** The new stored pool (null: no pool) and the token-log events describing the change. */
export function changeCredentialPool(
  provider: string,
  current: readonly StoredCredential[] | null,
  next: readonly CredentialInput[],
  pepper: string,
  now: Date,
): { pool: StoredCredential[] | null; events: CredentialEvent[] } {
  const events: CredentialEvent[] = [];
  const rotated = (keyName: string, message: string) =>
    events.push({ at: now, provider, keyName, kind: 'rotated', message, source: 'admin' });
  const seen = new Set<string>();
  const pool = next.map((entry, i): StoredCredential => {
    if (seen.has(entry.name))
      throw new ApiError('validation_error', {
        status: 422,
        param: `credentials.${i}.name`,
        humanMessage: `Credential ${entry.name} is listed twice`,
      });
    seen.add(entry.name);
    const existing = current?.find((c) => c.name === entry.name);
    if (entry.api_key !== undefined) {
      rotated(entry.name, existing ? 'key replaced' : 'added');
      return { name: entry.name, api_key_ciphertext: encryptCredential(entry.api_key, pepper) };
    }
    if (entry.api_key_env !== undefined) {
      if (existing?.api_key_env !== entry.api_key_env) rotated(entry.name, existing ? `now read from ${entry.api_key_env}` : 'added');
      return { name: entry.name, api_key_env: entry.api_key_env };
    }
    if (!existing)
      throw new ApiError('validation_error', {
        status: 422,
        param: `credentials.${i}.api_key`,
        humanMessage: `Credential ${entry.name} is new: give its api_key or api_key_env`,
      });
    return existing;
  });
  for (const old of current ?? []) if (!seen.has(old.name)) rotated(old.name, 'removed');
  return { pool: pool.length > 0 ? pool : null, events };
}

/** A pool as the admin page shows it: names and where each key is, never a key. */
export function presentCredentialPool(pool: readonly StoredCredential[] | null): { name: string; api_key: string }[] {
  return (pool ?? []).map((c) => ({ name: c.name, api_key: c.api_key_ciphertext ? 'stored' : `env:${c.api_key_env}` }));
}
