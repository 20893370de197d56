import type { z } from 'zod';

/** Renders zod issues as one line per field, `path: message`, for start-up errors. */
export function formatIssues(issues: readonly z.core.$ZodIssue[], root = ''): string {
  return issues
    .map((issue) => {
      const path = issue.path.reduce<string>(
        (acc, part) => (typeof part === 'number' ? `${acc}[${part}]` : acc ? `${acc}.${String(part)}` : String(part)),
        root,
      );
      return `  - ${path || '(root)'}: ${issue.message}`;
    })
    .join('\n');
}
