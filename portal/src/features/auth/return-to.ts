/**
 * A post-sign-in destination, only if it is a path on this portal: starts with one `/`, no
 * scheme, no `//` or `/\` (which browsers treat as another host), no control characters.
 */
export function safeReturnTo(value: string | undefined): string | undefined {
  if (!value || !value.startsWith('/') || value.startsWith('//') || value.startsWith('/\\')) return undefined;
  if (/[\u0000-\u001f\\]/.test(value)) return undefined;
  return value;
}
