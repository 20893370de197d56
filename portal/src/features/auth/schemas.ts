// Request bodies of the account actions (JSON or HTML form; both arrive as objects of strings
// or JSON values). Field names follow the seed: email, password, name, token.
import { z } from 'zod';
import { emailAddress } from '../../../../core/identity/email.js';

/** Within RFC 5321's lengths (core/identity/email.ts), as everywhere an address is taken. */
const email = emailAddress;
/** "is required" when absent, "must be text" when present as something else (a number, a list). */
const requiredText = { error: (issue: { input: unknown }) => (issue.input === undefined ? 'is required' : 'must be text') };
const password = z.string(requiredText).min(1, 'is required').max(1024, 'must be at most 1024 characters');
/**
 * A password being set (sign-up, reset, change; an invitation is accepted by signing up): its
 * length is the password rule's, answered `400 weak_password` saying it (core/identity/password-rule.ts),
 * not a 422 of this field; the body limit (portal/src/app.ts) bounds what arrives at all.
 */
const newPassword = z.string(requiredText).min(1, 'is required');
/** The form's second field, compared with the new one (a JSON caller may leave it out). */
const confirmPassword = z.string(requiredText).optional();
/** true, "true", "on" (a checked box) mean yes; false/"false" no; absent stays undefined. */
const yes = z.union([z.boolean(), z.enum(['true', 'on', 'false'])]).transform((v) => v === true || v === 'true' || v === 'on');

export const registerBody = z.object({
  email,
  password: newPassword,
  name: z.string(requiredText).trim().min(1, 'is required').max(120, 'must be at most 120 characters'),
  accept_terms: yes.optional(),
  return_to: z.string().max(500).optional(),
});
export const loginBody = z.object({ email, password, return_to: z.string().max(500).optional() });
export const emailBody = z.object({ email });
/** A new verification link: `return_to` is where the sign-up began, kept in the new link too. */
export const resendVerificationBody = z.object({ email, return_to: z.string().max(500).optional() });
export const resetBody = z.object({
  token: z.string(requiredText).min(1, 'is required').max(200),
  password: newPassword,
  confirm_password: confirmPassword,
});
export const changePasswordBody = z.object({
  current_password: password,
  new_password: newPassword,
  confirm_password: confirmPassword,
});
export const languageBody = z.object({ language: z.string(requiredText), return_to: z.string().max(500).optional() });
export const acceptBody = z.object({ accept: yes, provider: z.enum(['sso-a', 'sso-b']).optional() });
