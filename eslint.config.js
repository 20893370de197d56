// Lint: typescript-eslint with the type-aware rules that catch real bugs in a server that is
// mostly asynchronous code — a promise nobody awaits (its rejection is lost, or crashes the
// process), a promise passed where a plain callback is expected (an event handler's rejection),
// and dead code. Formatting is Prettier's job (.prettierrc.json), not ESLint's.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/**', 'dist/**', '.data/**', 'bench/.tmp/**', 'charts/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false, attributes: false } }],
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      // Tests and the simulator deliberately build loosely typed wire payloads.
      '@typescript-eslint/no-explicit-any': 'off',
      'no-empty': ['error', { allowEmptyCatch: true }],
    },
  },
  {
    // The tokenizer's merge ranks are tens of megabytes of long-lived heap: on the serving thread
    // every full collection would mark them again (bench/RESULTS.md, 2026-11-27). Only the token
    // counter's worker thread loads it; the serving side posts counts to it (gateway/src/tokens/count.ts).
    files: ['**/*.ts'],
    ignores: ['gateway/src/tokens/tokenizer.ts', 'gateway/src/tokens/count-worker.ts', '**/*.test.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              // The package and its subpaths (gpt-tokenizer/encoding/…, /model/…) load the same ranks.
              group: ['gpt-tokenizer', 'gpt-tokenizer/*', '**/tokens/tokenizer.js', './tokenizer.js'],
              allowTypeImports: true,
              message: 'The tokenizer runs in the token counter thread only: use tokenCounter (gateway/src/tokens/count.ts).',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['**/*.mjs', '**/*.js'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly', Buffer: 'readonly', setTimeout: 'readonly' } },
  },
  {
    // The portal's progressive scripts run in the browser (Chart.js loaded before them).
    files: ['portal/public/js/**/*.js'],
    languageOptions: { globals: { document: 'readonly', window: 'readonly', Chart: 'readonly' } },
  },
);
