// ESLint with type information (typescript-eslint): the rules that catch real defects in this
// codebase — a promise nobody awaits or catches, a promise where a callback returns void — on
// top of the recommended sets. Formatting is Prettier's job, not ESLint's.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'client/dist/', 'generated/', 'data/', 'site/', 'coverage/', '**/*.js', '!eslint.config.js'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      // Express 5 awaits a handler's promise and routes its rejection to the error handler.
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false } }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      // `x == null` (null or undefined) is the one loose comparison allowed.
      eqeqeq: ['error', 'always', { null: 'ignore' }],
      // Handlers, hooks and executors implement asynchronous interfaces; some answer at once.
      '@typescript-eslint/require-await': 'off',
      // Input checks match control characters on purpose (names, keys, problem texts).
      'no-control-regex': 'off',
    },
  },
  {
    // The server's value imports of `node:http` go through server/node-http.ts: an ES module
    // import of it loads undici at start, for nothing (the reason is there).
    files: ['server/**/*.ts'],
    ignores: ['server/node-http.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: [
            {
              name: 'node:http',
              allowTypeImports: true,
              message: "import { http } from server/node-http.ts: an ES module import of 'node:http' loads undici at start.",
            },
          ],
        },
      ],
    },
  },
  {
    // Scripts read JSON documents (the bundled contract, headers of the mock) as data.
    files: ['scripts/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-base-to-string': 'off',
    },
  },
  {
    // Tests read response bodies as `any` on purpose: they assert on what came over the wire.
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/require-await': 'off',
      // Fuzz values are JSON primitives by construction; type tests name methods without calling them.
      '@typescript-eslint/no-base-to-string': 'off',
      '@typescript-eslint/unbound-method': 'off',
    },
  },
  {
    files: ['eslint.config.js', 'scripts/**/*.mjs', 'client/**/*.mjs'],
    extends: [tseslint.configs.disableTypeChecked],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly' } },
  },
);
