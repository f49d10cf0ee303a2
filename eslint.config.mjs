import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// The boundaries of docs/architecture.md, enforced: a violation fails `npm run lint`.
const deterministic = ['node:*', 'fs', 'crypto', 'http', 'https', 'net', 'knex', 'pg', 'undici', '@temporalio/activity', '@temporalio/client', '@temporalio/worker', '@temporalio/common'];

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
    // The sandbox is chosen at the composition root, in test mode only.
    files: ['src/**/*.ts'],
    ignores: ['src/sandbox/**', 'src/cli/**', 'src/runtime.ts', 'src/platform.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ regex: '(^|/)sandbox(/|$)', message: 'no production path imports src/sandbox' }] }],
    },
  },
  {
    // Workflows are deterministic: only @temporalio/workflow and their own flow's contract.
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: deterministic, message: 'workflows must stay deterministic: import only @temporalio/workflow and the flow contract' },
            {
              regex: '^\\.\\./src/(?!flows/[a-z-]+/contract$|webhooks/contract$|health/contract$)',
              message: 'a workflow imports only its flow contract (src/flows/<flow>/contract)',
            },
          ],
        },
      ],
    },
  },
  {
    // A flow's contract is shared by the workflow bundle: it may import nothing but @temporalio/workflow.
    files: ['src/flows/*/contract.ts', 'src/webhooks/contract.ts', 'src/health/contract.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: '^(?!@temporalio/workflow$)', message: 'a contract imports nothing but @temporalio/workflow' }] },
      ],
    },
  },
  {
    // The façade translates only: it never touches the database, the ledger, Temporal or a flow's internals.
    files: ['rest-facade/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['knex', 'pg', '@temporalio/*'], message: 'the façade reaches the platform only through Connect clients' },
            {
              regex: '/src/(db|ledger|onboarding|sandbox|temporal)(/|$)|/src/flows/[a-z-]+/(service|activities|store)$|/src/(merchant-auth|preorders|webhooks|acquirers|instruments|idempotency)/(?!contract$|reasons$|fields$)',
              message: 'the façade may import contracts, src/gen, src/rpc clients and errors, src/money, src/crypto and src/web only',
            },
          ],
        },
      ],
    },
  },
  { files: ['**/*.js', '**/*.cjs', '**/*.mjs'], languageOptions: { globals: { require: 'readonly', module: 'writable', process: 'readonly', console: 'readonly', __dirname: 'readonly' } } },
);
