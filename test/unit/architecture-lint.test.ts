/**
 * The boundaries of docs/architecture.md ("Layers", "Rules") are allow-lists in eslint.config.mjs: each probe below
 * is a file written for the test inside the tree the config covers (a façade route, a flow's file, a workflow, a
 * contract…), linted with the ESLint API and removed. Every forbidden edge is probed through `import`, `require()`
 * and `import()`; the allowed edges must pass, so a configuration that refuses everything fails too.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(__dirname, '../..');
/** Unique per run, so that two runs in one tree never share a probe file. */
const tag = `probe${process.pid}x${Date.now().toString(36)}`;
/** The rules whose messages are boundary refusals. */
const BOUNDARY_RULES = new Set(['boundaries/dependencies', 'boundaries/no-unknown-files', 'no-restricted-syntax', 'no-restricted-imports']);

type Form = 'import' | 'require' | 'import()' | 'import type';
interface Probe {
  /** What the probe tries, as the test names it. */
  edge: string;
  /** The probe file, relative to the repository root ({tag} is replaced). */
  file: string;
  /** The module the probe loads, as written in it ({tag} is replaced). */
  target: string;
  form: Form;
  /** Extra source, for the forms that are not one statement (computed paths, TypeScript's own forms). */
  code?: string;
}

function source(target: string, form: Form): string {
  switch (form) {
    case 'import':
      return `import * as probe from '${target}';\nexport { probe };\n`;
    case 'import type':
      return `import type * as probe from '${target}';\nexport type Probe = typeof probe;\n`;
    case 'require':
      return `export const probe = require('${target}');\n`;
    case 'import()':
      return `export const probe = () => import('${target}');\n`;
  }
}

const EVERY_FORM: Form[] = ['import', 'require', 'import()'];
const each = (edge: string, file: string, target: string, forms: Form[] = EVERY_FORM): Probe[] => forms.map((form) => ({ edge, file, target, form }));

const FACADE = 'rest-facade/partner/{tag}.ts';
const WORKFLOW = 'workflows/{tag}.ts';
const CONTRACT = 'src/flows/{tag}-c/contract.ts';
const FLOW = 'src/flows/deposit/{tag}.ts';
/** A file of the money-out saga's kernel, and of the upstream provider's capability. */
const KERNEL = 'src/flows/money-out/{tag}.ts';
const UPSTREAM = 'src/upstream/{tag}.ts';

/** Each must be refused. */
const refused: Probe[] = [
  // The façade translates only.
  ...each('façade → composition root (platform)', FACADE, '../../src/platform'),
  ...each('façade → composition root (runtime)', FACADE, '../../src/runtime'),
  ...each('façade → the worker’s activities', FACADE, '../../src/activities'),
  ...each('façade → a flow’s activities', FACADE, '../../src/flows/payin/activities'),
  ...each('façade → the payin outbox', FACADE, '../../src/flows/payin/outbox'),
  ...each('façade → a flow’s store', FACADE, '../../src/flows/pre-transfer/store'),
  ...each('façade → a flow’s service', FACADE, '../../src/flows/wallet/service'),
  ...each('façade → platform keys', FACADE, '../../src/crypto/platform-keys'),
  ...each('façade → data keys', FACADE, '../../src/crypto/data-keys'),
  ...each('façade → the database', FACADE, '../../src/db/knex'),
  ...each('façade → the Temporal client', FACADE, '../../src/temporal/client'),
  ...each('façade → the ledger', FACADE, '../../src/ledger/ledger'),
  ...each('façade → onboarding', FACADE, '../../src/onboarding'),
  ...each('façade → a capability’s internals', FACADE, '../../src/preorders/store'),
  ...each('façade → the RPC server', FACADE, '../../src/rpc/server'),
  ...each('façade → knex', FACADE, 'knex'),
  ...each('façade → pg', FACADE, 'pg'),
  ...each('façade → @temporalio/client', FACADE, '@temporalio/client'),
  { edge: 'façade → a type of @temporalio/workflow', file: FACADE, target: '@temporalio/workflow', form: 'import type' },
  // Workflows are deterministic.
  ...each('workflow → a Node module (node:fs)', WORKFLOW, 'node:fs'),
  ...each('workflow → a Node module (crypto)', WORKFLOW, 'crypto'),
  ...each('workflow → an npm module', WORKFLOW, 'knex'),
  ...each('workflow → @temporalio/activity', WORKFLOW, '@temporalio/activity'),
  ...each('workflow → another flow’s contract', WORKFLOW, '../src/flows/payin/contract'),
  ...each('workflow → another workflow', WORKFLOW, './payin'),
  ...each('workflow → a flow’s activities', WORKFLOW, '../src/flows/{tag}/activities'),
  { edge: 'workflow → PlatformDeps (types)', file: WORKFLOW, target: '../src/platform-deps', form: 'import type' },
  // A contract imports nothing but @temporalio/workflow.
  ...each('contract → an npm module', CONTRACT, 'zod'),
  ...each('contract → a Node module', CONTRACT, 'node:crypto'),
  ...each('contract → money', CONTRACT, '../../money'),
  ...each('contract → another contract', CONTRACT, '../payin/contract'),
  ...each('contract → its own flow’s files', CONTRACT, './activities'),
  { edge: 'contract → errors (types)', file: CONTRACT, target: '../../errors', form: 'import type' },
  // Slices meet only through contracts and shared capabilities.
  ...each('flow → another flow’s activities', FLOW, '../payin/activities'),
  ...each('flow → another flow’s store', FLOW, '../wallet/store'),
  ...each('flow → another flow’s service', FLOW, '../pre-transfer/service'),
  ...each('flow → another flow’s workflow', FLOW, '../../../workflows/payin'),
  ...each('flow → the composition root', FLOW, '../../platform'),
  ...each('flow → the worker’s activities', FLOW, '../../activities'),
  ...each('flow → the ledger’s internals', FLOW, '../../ledger/kernel'),
  ...each('flow → AdminService', FLOW, '../../admin/service'),
  ...each('flow → the RPC server', FLOW, '../../rpc/server'),
  ...each('flow → the façade', FLOW, '../../../rest-facade/merchant/contract'),
  ...each('flow → the sandbox', FLOW, '../../sandbox/acquirer'),
  // The ledger knows no flow, capability or onboarding.
  ...each('ledger → a flow’s contract', 'src/ledger/{tag}.ts', '../flows/payin/contract'),
  ...each('ledger → a flow’s activities', 'src/ledger/{tag}.ts', '../flows/pre-transfer/activities'),
  ...each('ledger → a capability', 'src/ledger/{tag}.ts', '../preorders'),
  ...each('ledger → onboarding', 'src/ledger/{tag}.ts', '../onboarding/merchants'),
  // Onboarding and the shared capabilities know no flow.
  ...each('onboarding → a flow’s store', 'src/onboarding/{tag}.ts', '../flows/deposit/store'),
  ...each('onboarding → a flow’s contract', 'src/onboarding/{tag}.ts', '../flows/payin/contract'),
  ...each('onboarding → a capability', 'src/onboarding/{tag}.ts', '../merchant-auth'),
  ...each('capability → a flow’s activities', 'src/preorders/{tag}.ts', '../flows/pre-transfer/activities'),
  ...each('capability → a flow’s contract', 'src/webhooks/{tag}.ts', '../flows/payin/contract'),
  ...each('capability → a flow’s workflow', 'src/webhooks/{tag}.ts', '../../workflows/deposit'),
  // Infrastructure knows no domain; the RPC layer knows no flow.
  ...each('infrastructure → onboarding', 'src/money/{tag}.ts', '../onboarding'),
  ...each('infrastructure → a flow’s store', 'src/db/{tag}.ts', '../flows/payin/store'),
  ...each('infrastructure → the ledger’s contract', 'src/crypto/{tag}.ts', '../ledger/types'),
  ...each('rpc → a flow’s service', 'src/rpc/{tag}.ts', '../flows/payin/service'),
  ...each('rpc → a capability', 'src/rpc/{tag}.ts', '../merchant-auth'),
  // The timeline reaches the flows through their contracts, like every other caller.
  ...each('timeline → a flow’s store', 'src/timeline/{tag}.ts', '../flows/payin/store'),
  ...each('timeline → a flow’s service', 'src/timeline/{tag}.ts', '../flows/refund/service'),
  ...each('timeline → the dashboard’s service', 'src/timeline/{tag}.ts', '../dashboard/service'),
  // The dashboard reads flows and capabilities; none of them reads it.
  ...each('flow → the dashboard', FLOW, '../../dashboard/service'),
  ...each('capability → the dashboard', 'src/webhooks/{tag}.ts', '../dashboard/sessions'),
  ...each('dashboard → the composition root', 'src/dashboard/{tag}.ts', '../platform'),
  ...each('dashboard → the sandbox', 'src/dashboard/{tag}.ts', '../sandbox/upstream'),
  ...each('flow → the timeline', FLOW, '../../timeline/types'),
  ...each('workflow → the search attributes’ platform side', WORKFLOW, '../src/temporal/search-attributes'),
  ...each('infrastructure → a workflow', 'src/temporal/{tag}.ts', '../../workflows/payin'),
  ...each('infrastructure other than src/temporal → the workflows’ search-attribute keys', 'src/db/{tag}.ts', '../../workflows/search-attributes'),
  // No production path imports the sandbox.
  ...each('AdminService → the sandbox', 'src/admin/{tag}.ts', '../sandbox/upstream'),
  ...each('capability → the sandbox', 'src/acquirers/{tag}.ts', '../sandbox/acquirer'),
  // What the plugin cannot read is refused by itself.
  { edge: 'flow → a require() of a computed path', file: FLOW, target: '../wallet/store', form: 'require', code: 'export const probe = require(`../wallet/store`);\n' },
  { edge: 'flow → an import() of a computed path', file: FLOW, target: '../wallet/store', form: 'import()', code: "const where = '../wallet/store';\nexport const probe = () => import(where);\n" },
  { edge: 'flow → a require() by createRequire', file: FLOW, target: '../wallet/store', form: 'require', code: "import { createRequire } from 'node:module';\nexport const probe = createRequire(__filename)('../wallet/store');\n" },
  { edge: 'flow → another flow’s store by `import x = require()`', file: FLOW, target: '../wallet/store', form: 'require', code: "import probe = require('../wallet/store');\nexport { probe };\n" },
  { edge: 'flow → another flow’s store by `typeof import()`', file: FLOW, target: '../wallet/store', form: 'import type', code: "export type Probe = typeof import('../wallet/store');\n" },
  { edge: 'flow → another flow’s store by `export * from`', file: FLOW, target: '../wallet/store', form: 'import', code: "export * from '../wallet/store';\n" },
  // The money-out kernel knows no flow; the upstream's capability knows no flow (the composition root hands them in).
  ...each('money-out kernel → a flow’s store', KERNEL, '../refund/store'),
  ...each('money-out kernel → a flow’s contract', KERNEL, '../refund/contract'),
  ...each('money-out kernel → a flow’s workflow', KERNEL, '../../../workflows/refund'),
  ...each('money-out kernel → onboarding', KERNEL, '../../onboarding/merchants'),
  ...each('money-out kernel → the ledger’s internals', KERNEL, '../../ledger/kernel'),
  ...each('a flow’s contract → the kernel’s activities', CONTRACT, '../money-out/activities'),
  ...each('workflow → the kernel’s activities', WORKFLOW, '../src/flows/money-out/activities'),
  ...each('upstream → the payin flow', UPSTREAM, '../flows/payin/notifications'),
  ...each('upstream → the refund flow', UPSTREAM, '../flows/refund/notifications'),
  ...each('upstream → the money-out kernel', UPSTREAM, '../flows/money-out/activities'),
  ...each('capability → the money-out kernel', 'src/webhooks/{tag}.ts', '../flows/money-out/contract'),
  // A new file nobody classified.
  { edge: 'an unclassified file at the top of src/', file: 'src/{tag}.ts', target: './config', form: 'import' },
];

/** Each must pass: the rules refuse what they must and no more. */
const accepted: Probe[] = [
  ...each('façade → a flow’s contract', FACADE, '../../src/flows/payin/contract'),
  ...each('façade → the RPC clients', FACADE, '../../src/rpc/clients'),
  ...each('façade → money', FACADE, '../../src/money'),
  ...each('façade → signature verification', FACADE, '../../src/crypto/rsa2'),
  ...each('façade → a capability’s reason table', FACADE, '../../src/preorders/reasons'),
  ...each('façade → the Area A answers', FACADE, '../../src/flows/pre-transfer/area-a'),
  ...each('façade → its views', FACADE, '../views/html'),
  ...each('façade → koa', FACADE, 'koa'),
  ...each('façade → a Node module', FACADE, 'node:crypto'),
  ...each('workflow → @temporalio/workflow', WORKFLOW, '@temporalio/workflow'),
  ...each('workflow → its own flow’s contract', WORKFLOW, '../src/flows/{tag}/contract'),
  ...each('workflow → the shared search-attribute keys', WORKFLOW, './search-attributes'),
  ...each('src/temporal → the workflows’ search-attribute keys', 'src/temporal/{tag}.ts', '../../workflows/search-attributes'),
  ...each('contract → @temporalio/workflow', CONTRACT, '@temporalio/workflow'),
  ...each('flow → its own store', FLOW, './store'),
  ...each('flow → its own workflow', FLOW, '../../../workflows/deposit'),
  ...each('flow → another flow’s contract', FLOW, '../wallet/contract'),
  ...each('flow → a capability', FLOW, '../../preorders'),
  ...each('flow → onboarding', FLOW, '../../onboarding/merchants'),
  ...each('flow → the ledger’s contract', FLOW, '../../ledger/types'),
  ...each('flow → the database', FLOW, '../../db/knex'),
  ...each('flow → the RPC caller', FLOW, '../../rpc/caller'),
  { edge: 'flow → PlatformDeps', file: FLOW, target: '../../platform-deps', form: 'import type' },
  ...each('capability → a capability', 'src/preorders/{tag}.ts', '../webhooks'),
  ...each('capability → onboarding', 'src/webhooks/{tag}.ts', '../onboarding/merchants'),
  ...each('capability → its own workflow', 'src/webhooks/{tag}.ts', '../../workflows/webhook-delivery'),
  ...each('ledger → money', 'src/ledger/{tag}.ts', '../money'),
  ...each('ledger → its own files', 'src/ledger/{tag}.ts', './kernel'),
  ...each('onboarding → secrets', 'src/onboarding/{tag}.ts', '../crypto/secrets'),
  ...each('rpc → the logger', 'src/rpc/{tag}.ts', '../logger'),
  ...each('AdminService → a flow', 'src/admin/{tag}.ts', '../flows/reconciliation/service'),
  ...each('flow → the money-out kernel’s activities', FLOW, '../money-out/activities'),
  ...each('flow → the money-out kernel’s contract', FLOW, '../money-out/contract'),
  ...each('a flow’s contract → the money-out contract', CONTRACT, '../money-out/contract'),
  ...each('workflow → the money-out contract (the saga’s body)', WORKFLOW, '../src/flows/money-out/contract'),
  ...each('money-out kernel → a capability', KERNEL, '../../webhooks'),
  ...each('money-out kernel → the ledger’s contract', KERNEL, '../../ledger/types'),
  ...each('money-out kernel → its own files', KERNEL, './contract'),
  ...each('upstream → a capability', UPSTREAM, '../events'),
  ...each('upstream → its own files', UPSTREAM, './client'),
  ...each('flow → the upstream', FLOW, '../../upstream/client'),
  ...each('the CLI → the sandbox', 'src/cli/{tag}.ts', '../sandbox/upstream'),
  ...each('the CLI → the runtime', 'src/cli/{tag}.ts', '../runtime'),
  ...each('timeline → a flow’s contract', 'src/timeline/{tag}.ts', '../flows/refund/contract'),
  ...each('timeline → a flow’s reason table', 'src/timeline/{tag}.ts', '../flows/payin/reasons'),
  ...each('timeline → the dashboard’s session lookup (named)', 'src/timeline/{tag}.ts', '../dashboard/sessions'),
  ...each('timeline → a capability', 'src/timeline/{tag}.ts', '../events'),
  ...each('dashboard → a flow’s contract', 'src/dashboard/{tag}.ts', '../flows/payin/contract'),
  ...each('dashboard → a flow’s internals (named, a debt)', 'src/dashboard/{tag}.ts', '../flows/payin/policy'),
  ...each('dashboard → a capability', 'src/dashboard/{tag}.ts', '../webhooks'),
];

const withTag = (text: string) => text.split('{tag}').join(tag);

/**
 * The probe flows, written for the run: `src/flows/<probe>/` is the flow of the probe workflow `workflows/<probe>.ts`,
 * `src/flows/<probe>-c/` the flow of the probe contract.
 */
const PROBE_FLOWS: Record<string, string[]> = { [`src/flows/${tag}`]: ['contract.ts', 'activities.ts'], [`src/flows/${tag}-c`]: ['activities.ts'] };

/** The module a probe names exists (a file of the tree, of a probe flow, or an installed or Node module): no probe passes or fails on a typo. */
function resolves(probe: Probe): boolean {
  const target = withTag(probe.target);
  if (!target.startsWith('.')) return target.startsWith('node:') || target === 'crypto' || existsSync(path.join(root, 'node_modules', target, 'package.json'));
  const base = path.relative(root, path.resolve(path.dirname(path.join(root, withTag(probe.file))), target));
  const probeFlow = PROBE_FLOWS[path.dirname(base)];
  if (probeFlow) return probeFlow.includes(`${path.basename(base)}.ts`);
  return ['.ts', '/index.ts'].some((suffix) => existsSync(path.join(root, base + suffix)));
}

/** Lints each probe, written at its path, in one child process (eslint loads its flat config as an ES module). */
function lintProbes(probes: Probe[]): Promise<string[][]> {
  const script = `
    import { ESLint } from 'eslint';
    import { writeFileSync, rmSync } from 'node:fs';
    const probes = JSON.parse(process.argv[1]);
    const eslint = new ESLint({ cwd: process.cwd(), cache: false });
    const out = [];
    for (const { file, code } of probes) {
      writeFileSync(file, code);
      try {
        const [result] = await eslint.lintFiles([file]);
        out.push(result.messages.map((m) => m.ruleId + ': ' + m.message));
      } finally {
        rmSync(file, { force: true });
      }
    }
    process.stdout.write(JSON.stringify(out));`;
  const written = probes.map((probe) => ({ file: path.join(root, withTag(probe.file)), code: withTag(probe.code ?? source(probe.target, probe.form)) }));
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['--input-type=module', '-e', script, JSON.stringify(written)], { cwd: root, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) =>
      error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(JSON.parse(stdout) as string[][]),
    );
  });
}

const refusals = (messages: string[]) => messages.filter((message) => BOUNDARY_RULES.has(message.slice(0, message.indexOf(':'))));
const title = (probe: Probe) => `${probe.edge} by ${probe.form} (${withTag(probe.file).replace(tag, '<probe>')} → ${probe.target.replace('{tag}', '<probe>')})`;

describe('architecture boundaries (eslint.config.mjs)', () => {
  let results: string[][] = [];

  beforeAll(async () => {
    try {
      for (const [folder, names] of Object.entries(PROBE_FLOWS)) {
        mkdirSync(path.join(root, folder), { recursive: true });
        for (const name of names) writeFileSync(path.join(root, folder, name), 'export const probe = 1;\n');
      }
      results = await lintProbes([...refused, ...accepted]);
    } finally {
      for (const folder of Object.keys(PROBE_FLOWS)) rmSync(path.join(root, folder), { recursive: true, force: true });
    }
    const refusedCount = refused.filter((_, index) => refusals(results[index]).length > 0).length;
    // The count the docs and the review quote: probes refused / probes that must be refused.
    console.log(`architecture lint: ${refusedCount} / ${refused.length} forbidden probes refused; ${accepted.length} allowed probes linted`);
  }, 120_000);

  it('leaves no probe file behind', () => {
    const left = [...Object.keys(PROBE_FLOWS), ...[...refused, ...accepted].map((probe) => withTag(probe.file))];
    expect(left.filter((file) => existsSync(path.join(root, file)))).toEqual([]);
  });

  it.each([...refused, ...accepted].map((probe) => [title(probe), probe] as const))('probes an existing module: %s', (_title, probe) => {
    expect(resolves(probe)).toBe(true);
  });

  it.each(refused.map((probe, index) => [title(probe), index] as const))('refuses %s', (_title, index) => {
    expect(refusals(results[index])).not.toEqual([]);
  });

  it.each(accepted.map((probe, index) => [title(probe), refused.length + index] as const))('accepts %s', (_title, index) => {
    expect(results[index]).toEqual([]);
  });
});
