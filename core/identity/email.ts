// What the platform accepts as an email address, in one place: every form and body that takes an
// address (sign-up, sign-in, resets, invites, promotions, project members, billing and report
// recipients) checks it by this schema.
import { z } from 'zod';

/** RFC 5321 §4.5.3.1: a forward-path is at most 256 octets with its angle brackets, so 254 for the address. */
export const maxEmailLength = 254;
/** RFC 5321 §4.5.3.1.1: the local part (before the @) is at most 64 octets. */
export const maxEmailLocalPartLength = 64;

/** Why `address` is too long for RFC 5321, or undefined when it is not. Lengths in octets (UTF-8). */
export function emailLengthProblem(address: string): string | undefined {
  if (Buffer.byteLength(address, 'utf8') > maxEmailLength) return `must be at most ${maxEmailLength} characters`;
  const local = address.slice(0, address.lastIndexOf('@'));
  if (Buffer.byteLength(local, 'utf8') > maxEmailLocalPartLength)
    return `must have at most ${maxEmailLocalPartLength} characters before the @`;
  return undefined;
}

/**
 * An email address as text: trimmed, well formed, and within RFC 5321's lengths (at most 254
 * characters, at most 64 before the @), so mail can actually be delivered to it.
 */
export const emailAddress = z
  .string({ message: 'must be an email address' })
  .trim()
  .superRefine((value, ctx) => {
    const problem = emailLengthProblem(value);
    if (problem) ctx.addIssue({ code: 'custom', message: problem, abort: true });
  })
  .pipe(z.email({ message: 'must be an email address' }));
