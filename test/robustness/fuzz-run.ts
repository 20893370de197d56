// How the fuzz suites run: seeded (a fresh seed each run unless SVC_FUZZ_SEED names one, printed
// with any failure so it can be replayed) and bounded (SVC_FUZZ_CASES; `npm run fuzz` runs longer).
import fc from 'fast-check';

/** The seed of this run: SVC_FUZZ_SEED, else a new one — so every run explores new ground. */
export const fuzzSeed: number = process.env.SVC_FUZZ_SEED ? Number(process.env.SVC_FUZZ_SEED) : (Math.random() * 2 ** 31) | 0;

/** Cases for a suite: its share of the default budget, or of SVC_FUZZ_CASES when set. */
export function fuzzCases(defaultCases: number, share = 1): number {
  const total = process.env.SVC_FUZZ_CASES ? Number(process.env.SVC_FUZZ_CASES) : undefined;
  return total === undefined ? defaultCases : Math.max(1, Math.round(total * share));
}

/** A ceiling for a test running `cases` cases (generous: only a hang reaches it). */
export function fuzzTimeoutMs(cases: number): number {
  return Math.max(60_000, cases * 100);
}

/**
 * Runs an async property with the run's seed. Shrinking is off: each case is an HTTP exchange,
 * and the failing case itself (printed with the seed) is what one replays. The error names the
 * seed and the command that replays it.
 */
export async function fuzz<T>(suite: string, arbitrary: fc.Arbitrary<T>, cases: number, check: (value: T) => Promise<void>): Promise<void> {
  try {
    await fc.assert(fc.asyncProperty(arbitrary, check), { seed: fuzzSeed, numRuns: cases, endOnFailure: true });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new Error(
      `${suite} failed with seed ${fuzzSeed} — replay: SVC_FUZZ_SEED=${fuzzSeed} npx vitest run test/robustness/fuzz\n${message}`,
      { cause: error },
    );
  }
}

/** Strings that have broken parsers, databases and tokenizers before, mixed into generated values. */
export const hostileStrings: readonly string[] = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\ud800',
  '\udc00x',
  '\ufeff',
  '%00',
  '%zz',
  '../../etc/passwd',
  '\r\nx-injected: 1',
  '${jndi:ldap://x}',
  "'; drop table api_keys; --",
  '<script>alert(1)</script>',
  '🚀'.repeat(50),
  '中文'.repeat(2_000),
  'a'.repeat(40_000),
  '{"nested":'.repeat(50),
  '[[[[[[[[[[',
  '-1',
  '1e309',
  'null',
  'auto',
  'gpt-4o-mini',
  'EU',
];

/** Any JSON value, with hostile strings, extreme numbers and some depth. */
export const anyJson: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 2, arbitrary: fc.constantFrom(...hostileStrings) },
  { weight: 1, arbitrary: fc.constantFrom(0, -1, 1.5, 2 ** 53, -(2 ** 63), 1e308, -1e-308, true, false, null, [], {}) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  {
    weight: 1,
    arbitrary: fc.integer({ min: 1, max: 180 }).map((depth) => JSON.parse(`${'['.repeat(depth)}${']'.repeat(depth)}`) as unknown),
  },
);
