// ESLint flat config: typescript-eslint's recommended rules plus the type-aware ones that catch
// what strict tsc does not (a promise nobody awaits, an `any` that leaks into typed code).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** The Node globals the plain-JS files (bin/, .mjs fixtures) use. */
const NODE_GLOBALS = Object.fromEntries(
  ['process', 'console', 'Buffer', 'URL', 'setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'setImmediate']
    .concat(['TextEncoder', 'TextDecoder', 'AbortController', 'fetch'])
    .map((name) => [name, 'readonly']),
);

export default tseslint.config(
  {
    ignores: [
      'host/**/generated/',
      'dist/',
      'coverage/',
      '.harness/',
      'node_modules/',
      '.paddock/',
      'data/',
      'bench/results/',
      'docs/',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.mts', '**/*.tsx'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-unsafe-assignment': 'error',
      '@typescript-eslint/no-unsafe-member-access': 'error',
      '@typescript-eslint/no-unsafe-call': 'error',
      '@typescript-eslint/no-unsafe-return': 'error',
      '@typescript-eslint/no-unsafe-argument': 'error',
      // `_`-prefixed names are the codebase's way to say "deliberately unused" (rest-omit, for-of drain).
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' },
      ],
      // A `let` assigned once but read first by a closure (a cleanup, a settle) cannot be `const`.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
    },
  },
  {
    // Vitest's asymmetric matchers (expect.any, expect.objectContaining, expect.stringContaining…)
    // are typed `any`, so every `toMatchObject({ id: expect.any(String) })` would be an "unsafe
    // assignment". The other no-unsafe-* rules stay on in tests.
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-unsafe-assignment': 'off' },
  },
  {
    // Plain JS (bin, fixtures written as .mjs runners, scripts): no type information, Node globals.
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    languageOptions: { globals: NODE_GLOBALS },
  },
);
