// The new-key form carries a one-use token, so that sending it again (reloading the "Key created"
// page, which is the answer to the form's POST, or a second click) opens the key it already made
// instead of making a second one. The tokens a session has used are kept in the session with the
// key each made (the last few only); a JSON client sends no token and is not affected.
import { randomUUID } from 'node:crypto';
import type { Request } from 'express';

/** How many used tokens a session remembers: enough for any tabs a person keeps open. */
const remembered = 20;
const tokenPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A fresh token for a new-key form. */
export function newFormToken(): string {
  return randomUUID();
}

/** The form token a request sent, if it is one this portal could have issued. */
export function sentFormToken(req: Request): string | undefined {
  const token = (req.body as { form_token?: unknown } | undefined)?.form_token;
  return typeof token === 'string' && tokenPattern.test(token) ? token : undefined;
}

/** The key an earlier submission of this form token created, if any. */
export function keyMadeBy(req: Request, token: string | undefined): number | undefined {
  if (token === undefined) return undefined;
  return req.session.keyFormsUsed?.find(([used]) => used === token)?.[1];
}

/** Remembers that `token` created key `keyNumber`. */
export function rememberFormToken(req: Request, token: string | undefined, keyNumber: number): void {
  if (token === undefined) return;
  req.session.keyFormsUsed = [...(req.session.keyFormsUsed ?? []), [token, keyNumber] as [string, number]].slice(-remembered);
}

/** The body without the form token, which is no key field. */
export function withoutFormToken(body: unknown): unknown {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return body;
  const { form_token: _token, ...fields } = body as Record<string, unknown>;
  return fields;
}
