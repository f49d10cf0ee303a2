/**
 * Benchmark `wallet`: Area C `transfer` actions per second and p50/p99 latency through the façade
 * (merchant headers, session and RSA2 signature verified, one Transfer RPC, the signed body claimed and answered once, one ledger transaction) at concurrency 32,
 * beside the ledger's own transfer rate (direct `ledger.transfer`, same concurrency) measured in the same run.
 * Goal: façade rate ≥ 0.5 × ledger rate.
 *
 * PostgreSQL: `BENCH_DATABASE_URL` or `DATABASE_URL` (a fresh database is created and dropped), else an embedded
 * server in a temporary directory and Temporal (`TEMPORAL_ADDRESS`, else a dev server is started).
 * `BENCH_OPERATIONS` (default 2000) operations per phase; `BENCH_PROFILE_DIR` writes a CPU profile of the measured
 * process there. Run: `npx tsx bench/wallet.ts` (or via bench/run.ts).
 * The client pre-signs its request bodies (a merchant signs on its own machine); the platform verifies each request.
 */
import { createLogger } from '../src/logger';
import { getUser } from '../src/onboarding';
import { runRoles } from '../src/runtime';
import { signRequestParameters } from '../src/crypto/rsa2';
import { onboardMerchantClient } from '../test/support/merchant-client';
import type { BenchResult } from './run';
import { cpuSecondsOf, measure, runWhenMain, startBenchEnvironment, startServeProcess, type Measurement } from './support/harness';

/** CPU time (user + system) process `pid` has used so far, in milliseconds (Linux /proc; 0 elsewhere). */
const processCpuMs = (pid: number) => (cpuSecondsOf(pid) ?? 0) * 1000;

const cpuMs = (usage: NodeJS.CpuUsage) => (usage.user + usage.system) / 1000;

export const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const USERS = 64;

export async function run(): Promise<BenchResult> {
  const operations = Number(process.env.BENCH_OPERATIONS ?? 2000);
  const environment = await startBenchEnvironment('wallet');
  const stops: Array<() => Promise<void>> = [];
  try {
    const config = environment.config();
    // Setup and the ledger baseline use in-process deps; the measured façade + RPC server run as they do in
    // production, in their own process (`payments serve --roles api,facade`), so the client does not share their
    // event loop.
    const local = await runRoles(config, ['api'], createLogger('silent'));
    stops.push(() => local.stop());
    const deps = local.deps!;
    // BENCH_PROFILE_DIR=<dir>: the measured process writes a V8 CPU profile there (open in Chrome DevTools).
    const profile = process.env.BENCH_PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}`] : [];
    const platform = await startServeProcess(config, {}, profile);
    stops.push(() => platform.stop());
    const { child } = platform;

    const { client, credentials } = await onboardMerchantClient(deps, platform.facadeUrl, 'Bench Merchant');
    if ((await client.login()).status !== 200) throw new Error('bench login failed');
    const settlement = await deps.ledger.platformAccount('settlement', 'USD');
    const users: Array<{ id: string; account: string }> = [];
    for (let index = 0; index < USERS; index++) {
      const created = await client.action('create_user', {
        email: `bench${index}@example.com`, first_name: 'Bench', last_name: String(index), address: 'Phnom Penh', currency: 'USD',
      });
      if (created.status !== 200) throw new Error(`create_user failed: ${created.text}`);
      const user = (await getUser(deps.database, String(created.body.data.id)))!;
      await deps.ledger.transfer({
        idempotency_key: `bench-fund-${user.id}`,
        description: 'bench funding',
        postings: [
          { account_id: settlement.id, amount_units: -100_000_000n },
          { account_id: user.wallet_account_id, amount_units: 100_000_000n },
        ],
      });
      users.push({ id: user.id, account: user.wallet_account_id });
    }
    const pair = (index: number) => [users[index % USERS]!, users[(index * 7 + 1) % USERS]!] as const;

    const ledgerCpu = process.cpuUsage();
    const ledger = await measure(operations, CONCURRENCY, async (index) => {
      const [from, candidate] = pair(index);
      const to = candidate === from ? users[(index + 1) % USERS]! : candidate;
      await deps.ledger.transfer({
        idempotency_key: `bench-ledger-${index}`,
        description: 'bench',
        postings: [
          { account_id: from.account, amount_units: -1n },
          { account_id: to.account, amount_units: 1n },
        ],
      });
    });
    const ledgerCpuMs = cpuMs(process.cpuUsage(ledgerCpu)) / operations;
    // A merchant signs on its own machine: sign every body up front, each a new movement with its own request_id (a
    // repeated signed body is answered from its idempotency record and moves nothing); the platform verifies each.
    const signedBodies = new Map<number, string>();
    for (let index = 0; index < operations; index++) {
      const [from, candidate] = pair(index);
      const to = candidate === from ? users[(index + 1) % USERS]! : candidate;
      const body = { service: 'transfer', from_user_id: from.id, to_user_id: to.id, amount: 0.01, currency: 'USD', request_id: `bench-${index}` };
      signedBodies.set(index, JSON.stringify(signRequestParameters(body, credentials.private_key!)));
    }
    let failures = 0;
    const childCpu = processCpuMs(child.pid!);
    const facade = await measure(operations, CONCURRENCY, async (index) => {
      const response = await client.post('/do-action', {}, { raw: signedBodies.get(index)! });
      if (response.status !== 200) failures++;
    });
    const facadeCpuMs = (processCpuMs(child.pid!) - childCpu) / operations;
    const check = await deps.ledger.check();
    const row = (label: string, sample: Measurement) => ({ path: label, concurrency: CONCURRENCY, operations, ...sample });
    return {
      name: 'wallet',
      rows: [row('façade /do-action transfer', facade), row('ledger.transfer', ledger)],
      ratios: [{ label: 'façade transfer ÷ ledger transfer (c=32)', value: facade.per_second / ledger.per_second, goal: 0.5 }],
      notes: [
        'façade path (own process: payments serve --roles api,facade): HTTP + Koa + one Transfer RPC through the in-process transport (server interceptors, message copies, no encoding; merchant headers, session and both users of the transfer cached AUTH_CACHE_SECONDS; RSA2 signature verified every time; the body parsed again and bound by the api) + the signed body’s idempotency claim and answer (2 statements) + ledger.transfer (4 statements, as the direct call)',
        `failed façade requests: ${failures}; ledger check ok after the run: ${check.ok}`,
        `CPU per operation (less noisy than rates on a shared machine): façade process ${facadeCpuMs.toFixed(2)} ms, ledger.transfer (bench process, client included) ${ledgerCpuMs.toFixed(2)} ms`,
      ],
    };
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    await environment.close();
  }
}

runWhenMain(module, run);
