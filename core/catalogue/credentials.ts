// Supplier credentials entered in the portal, encrypted at rest (AES-256-GCM) with a key derived
// from the deployment's key pepper (HKDF, its own label), so a database dump alone reveals no
// supplier key. They are decrypted only when a gateway or portal builds the catalogue, and never
// shown back: pages say only whether a provider has one.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

const label = 'svc catalogue supplier credentials v1';

function keyFrom(pepper: string): Buffer {
  return Buffer.from(hkdfSync('sha256', pepper, Buffer.alloc(0), label, 32));
}

/** `v1:<iv>:<tag>:<ciphertext>`, base64url parts. */
export function encryptCredential(secret: string, pepper: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyFrom(pepper), iv);
  const body = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return ['v1', iv, cipher.getAuthTag(), body].map((p) => (typeof p === 'string' ? p : p.toString('base64url'))).join(':');
}

/** The secret back; throws when the value was not made with this pepper (or was altered). */
export function decryptCredential(value: string, pepper: string): string {
  const [version, iv, tag, body] = value.split(':');
  if (version !== 'v1' || !iv || !tag || body === undefined) throw new Error('not a stored supplier credential');
  const decipher = createDecipheriv('aes-256-gcm', keyFrom(pepper), Buffer.from(iv, 'base64url'));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
}
