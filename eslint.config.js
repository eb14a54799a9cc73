// Lint holds the architecture lines of STYLE.md (docs/architecture.md): src/ never imports
// cli/, each module of src/ imports only modules on lower floors, no import circles, and
// the pure layers (engine, model, plan logic) never import I/O modules.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import js from '@eslint/js';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import importX from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';
import noImportCycle from './eslint/no-import-cycle.js';

const ioModules = [
  'fs', 'node:fs', 'fs/promises', 'node:fs/promises', 'http', 'node:http', 'https', 'node:https',
  'net', 'node:net', 'child_process', 'node:child_process', 'better-sqlite3', 'pg', 'ink', 'chokidar', 'fastify',
];

/**
 * Modules whose header comment says they are pure ("PURE", "Pure", "is pure"): the rule
 * below holds them to it, so a header can never claim what the code does not keep.
 */
const pureByHeader = readdirSync(join(import.meta.dirname, 'src'), { recursive: true, encoding: 'utf8' })
  .filter((file) => /\.tsx?$/.test(file))
  .map((file) => `src/${file}`)
  .filter((file) => {
    const header = /^\s*\/\*[\s\S]*?\*\//.exec(readFileSync(join(import.meta.dirname, file), 'utf8'))?.[0] ?? '';
    return /\b(PURE|Pure)\b|\bis pure\b/.test(header);
  });

/**
 * The floors of src/, lowest first. A module may import modules on lower floors only
 * (never one on its own floor or above), so the modules form no circle. docs/architecture.md
 * draws them.
 */
const floors = [
  ['model', 'errors.ts', 'version.ts', 'clock.ts'],
  ['counting'],
  ['evaluators', 'store', 'client'],
  ['engine', 'recording', 'tracing', 'sessions'],
  ['observability', 'gitops', 'sdk'],
  ['reload', 'testing', 'adapters', 'eval'],
  ['replay', 'server'],
  ['index.ts'],
];
const isFile = (module) => module.endsWith('.ts');
const pathOf = (module) => `./src/${module}${isFile(module) ? '' : '/**'}`;
// The rule wants each zone's `from` to be all globs (folders) or all plain paths (files).
const floorZones = floors.slice(0, -1).flatMap((floor, level) =>
  floor.flatMap((module) => {
    const above = floors.slice(level).flat().filter((other) => other !== module);
    const message = `${module} may import only modules on lower floors (see docs/architecture.md)`;
    return [above.filter((m) => !isFile(m)), above.filter(isFile)]
      .filter((from) => from.length > 0)
      .map((from) => ({ target: pathOf(module), from: from.map(pathOf), message }));
  }),
);

export default tseslint.config(
  { ignores: ['dist/**', 'packages/*/dist/**', 'node_modules/**', 'coverage/**', 'schema/**', 'examples/**/*.js', 'scripts/**', 'scratch/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/require-await': 'off',
    },
  },
  {
    files: ['src/**/*.ts', 'src/**/*.tsx'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['**/cli/**', '../../cli/*'], message: 'src/ must not import cli/' }] }],
    },
  },
  {
    files: ['src/**/*.ts', 'src/**/*.tsx'],
    plugins: { 'import-x': importX, guardctl: { rules: { 'no-import-cycle': noImportCycle } } },
    settings: {
      'import-x/extensions': ['.ts', '.tsx', '.js'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts', '.tsx'] },
      'import-x/resolver-next': [createTypeScriptImportResolver({ project: './tsconfig.json' })],
    },
    rules: {
      // Circles of any kind, type-only imports included (import-x/no-cycle skips those).
      'guardctl/no-import-cycle': 'error',
      'import-x/no-restricted-paths': ['error', { zones: [...floorZones, { target: './src/**', from: './cli/**', message: 'src/ must not import cli/' }] }],
    },
  },
  {
    // No circles outside src/ either: the CLI and the benchmarks.
    files: ['cli/**/*.ts', 'cli/**/*.tsx', 'bench/**/*.ts'],
    plugins: { guardctl: { rules: { 'no-import-cycle': noImportCycle } } },
    rules: { 'guardctl/no-import-cycle': 'error' },
  },
  {
    files: ['src/engine/**/*.ts', 'src/model/**/*.ts', 'src/gitops/plan*.ts', 'src/gitops/load*.ts', 'src/gitops/diagnostics*.ts', ...pureByHeader],
    rules: {
      'no-restricted-imports': ['error', { paths: ioModules.map((name) => ({ name, message: 'this layer is pure: no I/O' })) }],
    },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    extends: [tseslint.configs.disableTypeChecked],
  },
  {
    // Tests only: vitest's asymmetric matchers (expect.any, expect.stringMatching,
    // expect.objectContaining) are typed `any` by vitest, and tests read response bodies
    // as JSON.parse gives them (test/server/helpers.ts `json()`); each assertion states the
    // shape it expects and fails on a wrong one. Source code and benchmarks get no such
    // exemption.
    files: ['test/**/*.ts', 'test/**/*.tsx'],
    rules: {
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
    },
  },
  {
    files: ['test/**/*.ts', 'test/**/*.tsx', 'bench/**/*.ts'],
    rules: {
      '@typescript-eslint/unbound-method': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
);
