// ESLint (flat config): typescript-eslint's type-checked rules over every workspace's src and test and the root test/,
// plus the house rules (no `any`, no floating promises, no `export *`, no enums, type imports, process.env only where a
// process reads its config, workspaces imported by package name only, no import cycles, every import declared). Formatting is Prettier's (eslint-config-prettier comes last).
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import { defineConfig } from 'eslint/config';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import { importX } from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';

// Type information comes from tsconfig.eslint.json: one program over every src and test directory, with the @splitlet/*
// packages mapped to their sources (no build needed, and ~0.6 GB less memory than resolving each to its dist/*.d.ts).

/** Where a test file lives: devDependencies may be imported there, `process.env` read. */
const TEST_FILES = ['libs/*/test/**', 'services/*/test/**', 'test/**'];

export default defineConfig(
  { ignores: ['**/dist/**', '**/node_modules/**', 'docs/**', '.splitlet/**', '.state/**', '.build/**'] },
  js.configs.recommended,
  {
    files: ['**/*.ts'],
    extends: [tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: { project: './tsconfig.eslint.json', tsconfigRootDir: import.meta.dirname },
    },
    plugins: { 'import-x': importX },
    settings: {
      'import-x/resolver-next': [createTypeScriptImportResolver({ project: './tsconfig.eslint.json' })],
      // no-cycle follows imports by parsing each file: TypeScript ones with typescript-eslint's parser.
      'import-x/extensions': ['.ts', '.js', '.mjs'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
      // A workspace package resolves into libs/ or services/: external to the root package too, so the root's
      // test/ must declare in its devDependencies each @splitlet/* it imports, like any other package.
      'import-x/external-module-folders': ['node_modules', 'libs', 'services'],
    },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        { allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['test', 'describe', 'it', 'suite', 'before', 'after', 'beforeEach', 'afterEach'] }] },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
      // A `default` is a decision about the rest (the kubelet's "unknown state" branches, open string unions): the rule
      // guards the switches without one.
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
      '@typescript-eslint/consistent-type-imports': ['error', { prefer: 'type-imports', fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-explicit-any': 'error',
      // As tsc's noUnused*: a leading underscore marks a deliberately unused binding; `const { a: _a, ...rest } = o` omits a key.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
      // Passing on what was received (an AbortSignal's reason, a caught value) is not inventing a non-Error rejection.
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingAny: true, allowThrowingUnknown: true }],
      // The simulated shell unwinds `exit` and `break`/`continue` with these control-flow values; they are not errors.
      '@typescript-eslint/only-throw-error': [
        'error',
        { allow: [{ from: 'file', name: ['ShellExit', 'LoopControl'], path: 'services/sim-runtime/src/shell/shell.ts' }], allowThrowingAny: true, allowThrowingUnknown: true },
      ],
      // An async function without await is how this tree implements a Promise-returning port (fakes, the in-memory bus,
      // the simulator's applets): a throw becomes a rejection. The rule would force Promise.resolve/reject wrappers instead.
      '@typescript-eslint/require-await': 'off',
      'no-restricted-syntax': [
        'error',
        { selector: 'ExportAllDeclaration', message: 'No `export *`: name what the module exports.' },
        { selector: 'TSEnumDeclaration', message: 'No TS enums: use a const object and a union of its values.' },
      ],
      'no-restricted-properties': [
        'error',
        { object: 'process', property: 'env', message: "Read the environment only in the service's src/config.ts (or libs/service load-config, the CLI's main and up/)." },
      ],
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['@splitlet/*/src', '@splitlet/*/src/**', '@splitlet/*/dist', '@splitlet/*/dist/**'],
              message: 'Import a workspace by its package name and exports only (`@splitlet/x`, `@splitlet/x/testing`).',
            },
          ],
        },
      ],
      // Within a workspace. Between workspaces tsc -b already refuses circular project references; following every
      // external module (node_modules included) would hold ~1 GB more of parsed files.
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
      // libs/testkit is test support through and through (only ever a devDependency): its src may use devDependencies
      // (testcontainers) without shipping them in the production image.
      'import-x/no-extraneous-dependencies': ['error', { devDependencies: [...TEST_FILES, 'libs/testkit/src/**'], optionalDependencies: false }],
    },
  },
  {
    // The environment is read where a process composes itself, and by tests and the test kit.
    files: ['**/src/config.ts', 'libs/service/src/load-config.ts', 'services/cli/src/main.ts', 'services/cli/src/up/**', 'libs/testkit/src/**', ...TEST_FILES],
    rules: { 'no-restricted-properties': 'off' },
  },
  {
    // The API server's conformance suites read its responses as a client on the wire does: untyped JSON (`any`), walked
    // field by field. Typing every response shape there would restate the API under test. (To do: typed response
    // helpers, then drop this block.)
    files: ['test/integration/apiserver/**', 'test/integration/apiserver-*.test.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  {
    // The bin launchers (plain ESM JavaScript) and the bench's CommonJS preload: no type information.
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly' } },
  },
  prettier,
);
