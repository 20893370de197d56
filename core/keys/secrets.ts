import { createHmac, createSecretKey, randomBytes, timingSafeEqual, type KeyObject } from 'node:crypto';

/** Kinds of credential: managed keys (Management API / CRDs), API tokens (portal), the admin key. */
export type CredentialKind = 'managed' | 'token' | 'admin';

/** Secret prefixes per kind; `svc_` and `svc-sk-` are the gateway API's (docs/spec-conformance.md 2.2). */
export const secretPrefixes = {
  managed: 'svc-sk-',
  token: 'svc_',
  admin: 'svc-admin-',
} as const satisfies Record<CredentialKind, string>;

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Random base62 text; rejection sampling keeps every character equally likely. */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248 && out.length < length) out += BASE62[byte % 62];
    }
  }
  return out;
}

/** A new secret of the given kind: prefix + 40 base62 characters (~238 bits). */
export function generateSecret(kind: CredentialKind): string {
  return secretPrefixes[kind] + randomBase62(40);
}

/** A new public key identifier (safe to log and show). */
export function generateKeyId(): string {
  return `key_${randomBase62(20)}`;
}

/** Which kind a presented secret claims to be, by its prefix; undefined when none matches. */
export function credentialKindOf(secret: string): CredentialKind | undefined {
  // Check the longest prefixes first: `svc-sk-` and `svc-admin-` would never match `svc_`, but
  // keeping the order explicit makes adding a prefix safe.
  if (secret.startsWith(secretPrefixes.admin)) return 'admin';
  if (secret.startsWith(secretPrefixes.managed)) return 'managed';
  if (secret.startsWith(secretPrefixes.token)) return 'token';
  return undefined;
}

/** HMAC-SHA-256 of the secret under the server pepper, hex: the only form stored anywhere. */
export function hashSecret(secret: string, pepper: string): string {
  return secretDigest(secret, pepper).toString('hex');
}

/**
 * The pepper as a key object, made once per pepper: an HMAC keyed by a string imports the key
 * again at every call, and every request authenticates with one (1.9 against 3.0 µs on Node 22).
 */
const pepperKeys = new Map<string, KeyObject>();
function pepperKey(pepper: string): KeyObject {
  let key = pepperKeys.get(pepper);
  if (key === undefined) {
    key = createSecretKey(Buffer.from(pepper, 'utf8'));
    pepperKeys.set(pepper, key);
  }
  return key;
}

/** The same HMAC as raw bytes, for comparing with digestsEqual without decoding hex. */
export function secretDigest(secret: string, pepper: string): Buffer {
  return createHmac('sha256', pepperKey(pepper)).update(secret, 'utf8').digest();
}

/** Compares two digests in constant time (a length mismatch is not secret). */
export function digestsEqual(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && a.length > 0 && timingSafeEqual(a, b);
}

/** What people see of a secret to recognise it: prefix and last four characters. */
export function secretHint(secret: string): string {
  const kind = credentialKindOf(secret);
  const prefix = kind ? secretPrefixes[kind] : '';
  return `${prefix}…${secret.slice(-4)}`;
}
