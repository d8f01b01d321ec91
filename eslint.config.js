// Type-checked lint for every workspace. Run per package by turbo (`eslint src`).
import js from '@eslint/js'
import tseslint from 'typescript-eslint'
import { importX } from 'eslint-plugin-import-x'

export default tseslint.config(
  { ignores: ['**/node_modules/**', '**/dist/**', '**/.turbo/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    plugins: { 'import-x': importX },
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    settings: { 'import-x/extensions': ['.ts'] },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      // Fastify plugins and handlers are async by contract even when they await nothing.
      '@typescript-eslint/require-await': 'off',
      'import-x/no-cycle': 'error',
      'no-restricted-properties': [
        'error',
        {
          object: 'process',
          property: 'env',
          message: 'Read configuration through loadConfig(env) in main.ts.',
        },
      ],
    },
  },
  {
    files: ['**/main.ts', '**/*.test.ts', '**/bin/**', 'scripts/**', 'libs/testing/**'],
    rules: { 'no-restricted-properties': 'off' },
  },
  {
    // vitest fixtures must destructure their dependencies, even when they have none.
    files: ['libs/testing/**'],
    rules: { 'no-empty-pattern': 'off' },
  },
  {
    // Tests read untyped JSON bodies; asserting on them is the point.
    files: ['**/*.test.ts', '{apps,libs}/*/test/**'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
)
