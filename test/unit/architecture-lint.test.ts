/**
 * The boundaries of docs/architecture.md are enforced by eslint (eslint.config.mjs): each probe below is a
 * deliberate violation that `npm run lint` must refuse, next to an allowed import that it must accept.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';

const root = path.resolve(__dirname, '../..');

/** The probes' restricted-import messages, linted in one child process (eslint loads its flat config as an ES module). */
function lintProbes(probes: Array<[string, string]>): Promise<string[][]> {
  const script = `
    import { ESLint } from 'eslint';
    const probes = JSON.parse(process.argv[1]);
    const eslint = new ESLint({ cwd: process.cwd() });
    const out = [];
    for (const [filePath, code] of probes) {
      const [result] = await eslint.lintText(code, { filePath });
      out.push(result.messages.filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message));
    }
    process.stdout.write(JSON.stringify(out));`;
  const absolute = probes.map(([filePath, code]) => [path.join(root, filePath), code]);
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['--input-type=module', '-e', script, JSON.stringify(absolute)], { cwd: root }, (error, stdout, stderr) =>
      error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(JSON.parse(stdout) as string[][]),
    );
  });
}

const refused: Array<[string, string]> = [
  ['rest-facade/partner/probe.ts', "import { createDatabase } from '../../src/db/knex';\nexport const probe = createDatabase;\n"],
  ['rest-facade/payin/probe.ts', "import knex from 'knex';\nexport const probe = knex;\n"],
  ['rest-facade/merchant/probe.ts', "import { Client } from '@temporalio/client';\nexport const probe = Client;\n"],
  ['rest-facade/merchant/probe.ts', "import { createLedger } from '../../src/ledger/ledger';\nexport const probe = createLedger;\n"],
  ['rest-facade/payin/probe.ts', "import * as store from '../../src/flows/payin/store';\nexport const probe = store;\n"],
  ['workflows/probe.ts', "import { readFileSync } from 'node:fs';\nexport const probe = readFileSync;\n"],
  ['workflows/probe.ts', "import type { PlatformDeps } from '../src/platform-deps';\nexport type Probe = PlatformDeps;\n"],
  ['src/flows/payin/contract.ts', "import { z } from 'zod';\nexport const probe = z;\n"],
  ['src/flows/deposit/activities.ts', "import * as sandbox from '../../sandbox/acquirer';\nexport const probe = sandbox;\n"],
];

const accepted: Array<[string, string]> = [
  ['rest-facade/payin/probe.ts', "import type { PayinReason } from '../../src/flows/payin/contract';\nexport type Probe = PayinReason;\n"],
  ['workflows/probe.ts', "import { proxyActivities } from '@temporalio/workflow';\nimport type { PayinActivities } from '../src/flows/payin/contract';\nexport const probe = proxyActivities<PayinActivities>;\n"],
  ['src/flows/payin/contract.ts', "import { defineSignal } from '@temporalio/workflow';\nexport const probe = defineSignal('probe');\n"],
];

describe('architecture boundaries (eslint)', () => {
  let results: string[][] = [];
  beforeAll(async () => {
    results = await lintProbes([...refused, ...accepted]);
  }, 120_000);

  it.each(refused.map((probe, index) => [...probe, index] as const))('refuses %s importing %j', (_filePath, _code, index) => {
    expect(results[index]).not.toHaveLength(0);
  });

  it.each(accepted.map((probe, index) => [...probe, refused.length + index] as const))('accepts %s importing %j', (_filePath, _code, index) => {
    expect(results[index]).toEqual([]);
  });
});
