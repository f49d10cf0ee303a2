import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', '.data/', 'src/gen/', 'coverage/', 'bench/results/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-require-imports': 'off',
    },
  },
  {
    files: ['workflows/**/*.ts'],
    rules: {
      // Workflows are deterministic: only @temporalio/workflow and activity *types* may be imported.
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['node:*', 'fs', 'crypto', 'http', 'https', 'net', 'knex', 'pg', 'undici'], message: 'workflows must stay deterministic' }] },
      ],
    },
  },
  { files: ['**/*.js', '**/*.cjs', '**/*.mjs'], languageOptions: { globals: { require: 'readonly', module: 'writable', process: 'readonly', console: 'readonly', __dirname: 'readonly' } } },
);
