// Lint: typescript-eslint's recommended set plus the type-aware rules that catch lost promises.
// Formatting is Prettier's job (eslint-config-prettier turns off every rule that would argue with it).
import js from '@eslint/js'
import globals from 'globals'
import prettier from 'eslint-config-prettier'
import tseslint from 'typescript-eslint'
import { MAY_IMPORT } from './scripts/layers.mjs'

/** A part's name in an import: a folder, or a loose file without .ts. */
const nameOf = part => part.replace(/\.ts$/, '')
const PARTS = [...new Set([...Object.keys(MAY_IMPORT).map(nameOf), 'collectors'])]

/** One no-restricted-imports rule per part of src/: every other part it does not list is refused. */
const boundaries = Object.entries(MAY_IMPORT).map(([part, allowed]) => {
  const loose = part.endsWith('.ts')
  const refused = PARTS.filter(p => p !== nameOf(part) && !allowed.includes(p))
  // From a loose file, siblings are ./x; from inside a folder, ../x (or ../../x from a subfolder).
  const up = loose ? '\\./' : '(\\.\\./)+'
  return {
    files: loose ? [`src/${part}`] : [`src/${part}/**/*.ts`, `src/${part}/**/*.tsx`],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: `^${up}(${refused.join('|')})(/|\\.js$)`,
              message: `${nameOf(part)} may import only: ${allowed.join(', ') || 'nothing of ours'} (scripts/layers.mjs)`,
            },
          ],
        },
      ],
    },
  }
})

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', '.tap/**', 'data/**', 'test/fixtures/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.tsx'],
    languageOptions: {
      parserOptions: {
        project: ['./tsconfig.check.json', './src/viewer/tsconfig.json'],
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      // tap queues and awaits every subtest's promise itself; t.rejects()/t.resolves() likewise.
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          allowForKnownSafePromises: [{ from: 'package', package: '@tapjs/core', name: 'PromiseWithSubtest' }],
          allowForKnownSafeCalls: [
            {
              from: 'package',
              package: '@tapjs/asserts',
              name: ['rejects', 'resolves', 'resolveMatch', 'resolveMatchOnly'],
            },
          ],
        },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
    },
  },
  {
    // Units a reader can hold at once: a function within a screen or three, a file of one idea.
    files: ['src/**/*.ts', 'src/**/*.tsx', 'collectors/**/*.ts'],
    rules: {
      'max-lines-per-function': ['error', { max: 150 }],
      'max-lines': ['error', { max: 500 }],
    },
  },
  {
    // Tests and benchmarks read untyped JSON off the wire and from child processes.
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // Plain scripts (build helpers, bench children) run under Node without a tsconfig.
    files: ['**/*.js', '**/*.mjs'],
    languageOptions: { globals: { ...globals.node } },
  },
  ...boundaries,
  {
    files: ['collectors/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^\\.\\./src/(?!collector-kit\\.js$)',
              message: 'collectors import src/ only through src/collector-kit.ts',
            },
          ],
        },
      ],
    },
  },
  prettier,
  {
    // Prettier wraps code at 120; comments it cannot wrap are held to 160 (long messages stay whole).
    rules: {
      'max-len': [
        'error',
        { code: 160, ignoreUrls: true, ignoreRegExpLiterals: true, ignoreStrings: true, ignoreTemplateLiterals: true },
      ],
    },
  },
)
