// The password strength rule, one place for the check and the sentence that explains it.

/** What a password must be; shown on every form that sets one (and in docs/portal.md). */
export const passwordRule = {
  minLength: 10,
  maxLength: 256,
  text: 'At least 10 characters, with letters and at least one digit or symbol; not your email address, nor its name before the @.',
} as const;

/** Why a password is refused (for the weak_password message), or undefined when it is acceptable. */
export function passwordWeakness(password: string, email: string): string | undefined {
  if (password.length < passwordRule.minLength) return `The password must be at least ${passwordRule.minLength} characters long`;
  if (password.length > passwordRule.maxLength) return `The password must be at most ${passwordRule.maxLength} characters long`;
  if (!/\p{L}/u.test(password) || !/[^\p{L}]/u.test(password)) return 'The password must contain letters and at least one digit or symbol';
  if (new Set(password).size < 4) return 'The password repeats too few different characters';
  const local = email.split('@')[0]?.toLowerCase() ?? '';
  if (password.toLowerCase() === email.toLowerCase()) return 'The password must not be your email address';
  if (local.length >= 4 && password.toLowerCase().includes(local))
    return `The password must not contain the name of your email address ("${local}")`;
  return undefined;
}
