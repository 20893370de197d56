/**
 * A post-sign-in destination, only if it is a path on this portal: starts with one `/`, no
 * scheme, no `//` or `/\` (which browsers treat as another host), no control characters.
 */
export function safeReturnTo(value: string | undefined): string | undefined {
  if (!value || !value.startsWith('/') || value.startsWith('//') || value.startsWith('/\\')) return undefined;
  if (value.includes('\\') || [...value].some((c) => c.charCodeAt(0) < 0x20)) return undefined;
  return value;
}
