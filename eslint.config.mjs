import js from '@eslint/js';
import boundaries from 'eslint-plugin-boundaries';
import tseslint from 'typescript-eslint';

// The boundaries of docs/architecture.md ("Layers" and "Rules"), enforced as allow-lists: every import, export-from,
// require() and import() between the files of src/, rest-facade/ and workflows/ is refused unless a policy below
// allows it (later policies override earlier ones), and every such file must be classified.
// test/unit/architecture-lint.test.ts proves the refusals.

/**
 * Shared capabilities: several flows use them; they know no flow. `upstream` is the upstream crypto provider's port
 * (requests out, signed notifications in, dispatched to flows the composition root hands in), as `acquirers` is the
 * card acquirer's, and `bank-rails` the bank payouts' rails (docs/payouts.md "Bank payouts").
 */
const CAPABILITIES = ['merchant-auth', 'preorders', 'webhooks', 'acquirers', 'instruments', 'idempotency', 'events', 'upstream', 'bank-rails'];
/** The money-out saga's kernel (docs/money-out.md): below the flows that send money out, above the capabilities. */
const MONEY_OUT = 'src/flows/money-out';
/** Infrastructure folders: they know no domain. */
const INFRASTRUCTURE_FOLDERS = ['db', 'temporal', 'crypto', 'money', 'web', 'abuse', 'service-credentials', 'types'];
/** Infrastructure files at the top of src/. */
const INFRASTRUCTURE_FILES = ['config', 'logger', 'metrics', 'tracing', 'net', 'text', 'errors', 'field-problems', 'field-rules', 'admission', 'auth-changes'];
/** The composition root at the top of src/ (src/cli is the rest of it): builds every dependency once per process. */
const COMPOSITION_FILES = ['platform', 'runtime', 'worker', 'activities'];
/**
 * The workflows owned by a folder outside src/flows/ (`workflows/<flow>.ts` belongs to `src/flows/<flow>`), or a
 * second workflow of a flow (the deposit's refunds): the owner starts it by reference and its contract.ts is the
 * workflow's.
 */
const OTHER_WORKFLOWS = { 'webhook-delivery': 'webhooks', diagnostics: 'health', 'deposit-refund': 'flows/deposit', 'payout-schedule': 'flows/payout' };
/** The façade's npm modules (Node's own modules are allowed): no knex, pg or @temporalio/*. */
const FACADE_MODULES = ['koa', '@koa/router', 'raw-body', 'escape-html', '@connectrpc/connect', '@bufbuild/protobuf', '@opentelemetry/api'];

const folder = (type, pattern, capture) => ({ type, pattern, partialMatch: false, ...(capture ? { capture } : {}) });
const elements = [
  folder('facade', 'rest-facade'),
  folder('workflows', 'workflows'),
  // Before the flows' pattern: the first element that matches a file is its type.
  folder('money-out', MONEY_OUT),
  folder('flow', 'src/flows/*', ['flow']),
  folder('flow', 'src/health'), // the diagnostics workflow's service, activities and contract
  ...CAPABILITIES.map((name) => folder('capability', `src/${name}`)),
  folder('ledger', 'src/ledger'),
  folder('onboarding', 'src/onboarding'),
  folder('admin', 'src/admin'),
  // Read models for merchants and operators: the merchant dashboard's service and a payment's timeline. They reach
  // the flows through their contracts and reason tables like every other caller, and are imported by none but the
  // composition root (and the registries, their reason tables).
  folder('dashboard', 'src/dashboard'),
  folder('timeline', 'src/timeline'),
  folder('rpc', 'src/rpc'),
  folder('gen', 'src/gen'),
  ...INFRASTRUCTURE_FOLDERS.map((name) => folder('infrastructure', `src/${name}`)),
  folder('composition', 'src/cli'),
  folder('sandbox', 'src/sandbox'),
];

// Roles finer than a folder: each file gets the first category whose pattern matches. A file at the top of src/
// belongs to no folder element, so it must have a category here or `boundaries/no-unknown-files` refuses it.
const files = [
  { category: 'contract', pattern: `{src/flows/*,src/{${Object.values(OTHER_WORKFLOWS).join(',')}}}/contract.ts` },
  // The search-attribute keys every payment workflow shares: a leaf the workflows own (only @temporalio/workflow, as
  // every file of workflows/), which src/temporal's start-up registration reads. Before the workflows' pattern.
  { category: 'workflow-keys', pattern: 'workflows/search-attributes.ts' },
  { category: 'workflow-bundle', pattern: 'workflows/index.ts' },
  { category: 'workflow', pattern: 'workflows/*.ts', capture: ['workflow'] },
  { category: 'reason-table', pattern: '{src/*/reasons.ts,src/flows/*/reasons.ts,src/instruments/service-reasons.ts}' },
  { category: 'ledger-contract', pattern: 'src/ledger/types.ts' },
  { category: 'area-answers', pattern: 'src/flows/pre-transfer/area-a.ts' },
  { category: 'rpc-client', pattern: 'src/rpc/{clients,errors}.ts' },
  { category: 'rpc-context', pattern: 'src/rpc/{caller,client-address}.ts' },
  { category: 'composition', pattern: `src/{${COMPOSITION_FILES.join(',')}}.ts` },
  { category: 'deps', pattern: 'src/platform-deps.ts' },
  { category: 'registry', pattern: '{src/reasons.ts,src/rpc/service-reasons.ts}' },
  { category: 'infrastructure', pattern: `src/{${INFRASTRUCTURE_FILES.join(',')}}.ts` },
];

// Selectors, by what a file is or where a module comes from.
const element = (type, more = {}) => ({ element: { type, ...more } });
const category = (name, more = {}) => ({ file: { categories: name, ...more } });
const anyLocal = { module: { origin: 'local' } };
const anyModule = { module: { origin: ['external', 'core'] } };
const npm = (source) => ({ module: { origin: 'external', source } });
const infrastructure = [element('infrastructure'), category('infrastructure')];
/** The ledger's contract: the Ledger interface (its instance comes in PlatformDeps) and its reason table. */
const ledgerContract = [category('ledger-contract'), element('ledger', { fileInternalPath: 'reasons.ts' })];
/** What the façade may use of the infrastructure: nothing that reaches the database, Temporal or the platform keys. */
const facadeInfrastructure = [
  category('infrastructure', { path: 'src/{config,logger,metrics,net,text,errors,field-problems,field-rules,admission}.ts' }),
  element('infrastructure', { path: 'src/money' }),
  element('infrastructure', { path: 'src/web', fileInternalPath: ['url.ts', 'qr-png.ts'] }),
  // Signature verification and constant-time comparison (pure, over keys the caller passes).
  element('infrastructure', { path: 'src/crypto', fileInternalPath: ['rsa2.ts', 'hmac.ts', 'secrets.ts'] }),
];

const WORKFLOW_MESSAGE = 'a workflow is deterministic: it imports only @temporalio/workflow and its own flow\'s contract (docs/architecture.md "Rules")';

const policies = [
  // Node's and npm's modules: allowed, except where the policies at the end narrow them (workflows, contracts, façade).
  { from: anyLocal, allow: { to: anyModule } },

  // The façade translates only: the RPC clients and errors, contracts and reason tables, the Area A answers, the
  // generated messages and the infrastructure above; of src/abuse, only `addressGroup` (a client address's group).
  {
    from: element('facade'),
    allow: {
      to: [element('facade'), category('rpc-client'), category('registry', { path: 'src/rpc/service-reasons.ts' }), category('contract'), category('reason-table'), category('area-answers'), element('gen'), ...facadeInfrastructure],
    },
  },
  { from: element('facade'), allow: { to: element('infrastructure', { path: 'src/abuse' }), dependency: { specifiers: 'addressGroup' } } },

  // The RPC layer: its own files, the generated services, infrastructure. It knows no flow: the composition root
  // hands it the service implementations.
  { from: element('rpc'), allow: { to: [element('rpc'), element('gen'), ...infrastructure] } },

  // A flow: its own files and its own workflow (started by reference), the contracts of others, shared capabilities,
  // onboarding, the ledger's contract, infrastructure, the deps it is built from, its RPC's caller and address
  // (rpc-context) and the RPC errors' field lists.
  {
    from: element('flow'),
    allow: {
      to: [
        element('flow', { path: '{{ from.element.path }}' }),
        category('workflow', { captured: { workflow: '{{ from.element.captured.flow }}' } }),
        category('contract'),
        element('capability'),
        element('onboarding'),
        ...ledgerContract,
        ...infrastructure,
        category('deps'),
        element('gen'),
        category('rpc-context'),
        category('rpc-client', { path: 'src/rpc/errors.ts' }),
      ],
    },
  },

  // A flow that sends money out runs the money-out saga: every file of the kernel (its contract, its activities over
  // the flow's port). The kernel knows no flow: its own files, capabilities, the ledger's contract, infrastructure,
  // the deps.
  { from: element('flow'), allow: { to: element('money-out') } },
  { from: element('money-out'), allow: { to: [element('money-out'), element('capability'), ...ledgerContract, ...infrastructure, category('deps')] } },

  // A shared capability: capabilities, onboarding, the ledger's contract, infrastructure, deps, its RPC's caller.
  // No flow, not even a flow's contract.
  {
    from: element('capability'),
    allow: { to: [element('capability'), element('onboarding'), ...ledgerContract, ...infrastructure, category('deps'), element('gen'), category('rpc-context')] },
  },
  ...Object.entries(OTHER_WORKFLOWS).map(([workflow, owner]) => ({
    from: { element: { path: `src/${owner}` } },
    allow: { to: category('workflow', { captured: { workflow } }) },
  })),

  // Onboarding knows no flow and no capability; the ledger knows no flow, capability or onboarding.
  { from: element('onboarding'), allow: { to: [element('onboarding'), ...ledgerContract, ...infrastructure, category('deps'), element('gen')] } },
  { from: element('ledger'), allow: { to: [element('ledger'), ...infrastructure, element('gen')] } },

  // Infrastructure knows no domain. Two type-only exceptions, named: the tracing wraps the Ledger interface with
  // spans, and a workflow start's deadline reads its duration from PlatformDeps.
  { from: infrastructure, allow: { to: infrastructure } },
  // src/temporal registers the payment search attributes at start-up and builds the start option: it reads the keys
  // the workflows own (a leaf importing only @temporalio/workflow), nothing else of workflows/.
  { from: element('infrastructure', { path: 'src/temporal' }), allow: { to: category('workflow-keys') } },
  { from: category('infrastructure', { path: 'src/tracing.ts' }), allow: { to: category('ledger-contract'), dependency: { kind: 'type' } } },

  // PlatformDeps names what services and activities are built from: types only.
  { from: category('deps'), allow: { to: [...infrastructure, category('ledger-contract'), element('capability')], dependency: { kind: 'type' } } },

  // AdminService (operator RPCs) uses flows and capabilities and is used by none; it builds reconciliation's repairs
  // with the worker's createReconciliationRepairs (src/activities.ts), named.
  {
    from: element('admin'),
    allow: {
      to: [element('admin'), element('flow'), element('capability'), element('onboarding'), ...ledgerContract, ...infrastructure, category('deps'), element('gen'), category('rpc-context')],
    },
  },
  { from: element('admin'), allow: { to: category('composition', { path: 'src/activities.ts' }), dependency: { specifiers: 'createReconciliationRepairs' } } },

  // The read models (dashboard, timeline): their own files, the flows' contracts and reason tables, capabilities,
  // onboarding, the ledger's contract, infrastructure, the deps, their RPC's caller and address.
  ...['dashboard', 'timeline'].map((name) => ({
    from: element(name),
    allow: {
      to: [element(name), category('contract'), category('reason-table'), element('capability'), element('onboarding'), ...ledgerContract, ...infrastructure, category('deps'), element('gen'), category('rpc-context')],
    },
  })),
  // Named: the timeline checks a dashboard session proof with the dashboard's session lookup. The dashboard's service
  // still reads flows' internals (the payin's outcome policy module today) and the timeline: a debt listed in
  // docs/architecture.md "Layers", each edge for a port the composition root would hand in.
  { from: element('timeline'), allow: { to: element('dashboard', { fileInternalPath: 'sessions.ts' }) } },
  { from: element('dashboard'), allow: { to: [element('flow'), element('timeline')] } },

  // The registry of every reason merges the reason tables.
  { from: category('registry'), allow: { to: [category('contract'), category('reason-table'), element('capability', { path: 'src/idempotency' }), ...infrastructure] } },

  // The sandbox upstream and acquirer implement ports of the platform.
  { from: element('sandbox'), allow: { to: [element('sandbox'), element('capability'), ...infrastructure] } },

  // The composition root builds everything.
  { from: [element('composition'), category('composition')], allow: { to: anyLocal } },

  // The Area A answers, imported by the façade, stay pure: the pre-transfer contract, src/errors and src/text.
  { from: category('area-answers'), disallow: { to: anyLocal }, message: 'the Area A answers stay pure: they import only the pre-transfer contract and reasons, src/errors, src/text, src/field-problems, src/field-rules and src/money' },
  {
    from: category('area-answers'),
    allow: {
      to: [
        category('contract', { path: 'src/flows/pre-transfer/contract.ts' }),
        category('reason-table', { path: 'src/flows/pre-transfer/reasons.ts' }),
        category('infrastructure', { path: 'src/{errors,text,field-problems,field-rules}.ts' }),
        element('infrastructure', { path: 'src/money' }),
      ],
    },
  },

  // Workflows are deterministic: @temporalio/workflow and their own flow's contract, nothing else; the bundle's
  // index re-exports the workflows.
  { from: element('workflows'), disallow: { to: [anyLocal, anyModule] }, message: WORKFLOW_MESSAGE },
  { from: element('workflows'), allow: { to: npm('@temporalio/workflow') } },
  { from: category('workflow'), allow: { to: category('contract', { path: 'src/flows/{{ from.file.captured.workflow }}/contract.ts' }) } },
  { from: category('workflow'), allow: { to: category('workflow-keys') } },
  // The money-out saga's contract holds its workflow body (runMoneyOutSaga): any workflow may run it.
  { from: category('workflow'), allow: { to: category('contract', { path: `${MONEY_OUT}/contract.ts` }) } },
  ...Object.entries(OTHER_WORKFLOWS).map(([workflow, owner]) => ({
    from: category('workflow', { captured: { workflow } }),
    allow: { to: category('contract', { path: `src/${owner}/contract.ts` }) },
  })),
  { from: category('workflow-bundle'), allow: { to: category('workflow') } },

  // A contract is shared with the workflow bundle: it imports nothing but @temporalio/workflow.
  { from: category('contract'), disallow: { to: [anyLocal, anyModule] }, message: 'a contract imports nothing but @temporalio/workflow (docs/architecture.md "Rules")' },
  { from: category('contract'), allow: { to: npm('@temporalio/workflow') } },
  // A money-out flow's contract builds on the saga's (its stages, steps and key builder): pure as well.
  { from: category('contract'), allow: { to: category('contract', { path: `${MONEY_OUT}/contract.ts` }) } },

  // The façade's npm modules, as an allow-list.
  {
    from: element('facade'),
    disallow: { to: { module: { origin: 'external' } } },
    message: 'the façade uses only the npm modules listed in eslint.config.mjs (no knex, pg or @temporalio/*): it reaches the platform through Connect clients',
  },
  { from: element('facade'), allow: { to: npm(FACADE_MODULES) } },

  // No production path imports the sandbox: only the runtime and the CLI choose it, in test mode.
  { from: anyLocal, disallow: { to: element('sandbox') }, message: 'no production path imports src/sandbox: only src/runtime.ts and src/cli choose it, in test mode' },
  { from: [element('sandbox'), element('composition'), category('composition', { path: 'src/runtime.ts' })], allow: { to: element('sandbox') } },
];

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
    files: ['{src,rest-facade,workflows}/**/*.{ts,js,mjs,cjs}'],
    plugins: { boundaries },
    settings: {
      'import/resolver': { node: { extensions: ['.ts', '.d.ts', '.js', '.json'] } },
      'boundaries/include': ['src/**', 'rest-facade/**', 'workflows/**'],
      'boundaries/elements': elements,
      'boundaries/files': files,
      'boundaries/files-single-match': true,
      // Every way a module is loaded: import, export … from, require(), import(), and TypeScript's `import x =
      // require()` and `typeof import()`.
      'boundaries/dependency-nodes': ['import', 'export', 'require', 'dynamic-import'],
      'boundaries/additional-dependency-nodes': [
        { selector: 'TSImportEqualsDeclaration > TSExternalModuleReference > Literal', kind: 'value', name: 'import-equals' },
        { selector: 'TSImportType > Literal.source', kind: 'type', name: 'import-type' },
      ],
    },
    rules: {
      // checkAllOrigins: npm and Node modules too; checkUnknownLocals: a file no descriptor classifies is refused;
      // checkInternals: files of one element (a flow's, the workflows') are held to the policies as well.
      'boundaries/dependencies': ['error', { default: 'disallow', checkAllOrigins: true, checkUnknownLocals: true, checkInternals: true, policies }],
      'boundaries/no-unknown-files': 'error',
      // What the plugin cannot read: a module path computed at run time, or a require() made by createRequire.
      'no-restricted-syntax': [
        'error',
        { selector: "CallExpression[callee.name='require'][arguments.0.type!='Literal']", message: 'require() takes a string literal, for the boundaries lint to check it' },
        { selector: "ImportExpression[source.type!='Literal']", message: 'import() takes a string literal, for the boundaries lint to check it' },
        { selector: "CallExpression[callee.name='createRequire']", message: 'a require() made by createRequire escapes the boundaries lint' },
      ],
    },
  },
  {
    // Named exceptions to no-restricted-syntax: the embedded PostgreSQL binaries' package is named by platform and
    // architecture; the tracing loads the OpenTelemetry instrumentation with Node's own require.
    files: ['src/db/embedded.ts', 'src/tracing.ts'],
    rules: { 'no-restricted-syntax': 'off' },
  },
  { files: ['**/*.js', '**/*.cjs', '**/*.mjs'], languageOptions: { globals: { require: 'readonly', module: 'writable', process: 'readonly', console: 'readonly', __dirname: 'readonly' } } },
);
