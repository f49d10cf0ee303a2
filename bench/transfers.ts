/**
 * Benchmark `transfers`: completed Area A transfers per second — create.unified.fundTransfer then
 * confirm.fundTransfer through the façade, RSA2 signed by the client and every response verified, one token
 * reused — at concurrency 32 with p50/p99, beside the bare Temporal floor measured in the same run (start a
 * workflow, one Update that runs one no-op activity: bench/workflows/noop.ts on its own task queue and worker).
 * Goal: transfers/s ≥ 0.8 × floor/s.
 *
 * One process runs the api, facade and worker roles and the client; its RSS is reported, and the Temporal dev
 * server's when this bench started it. Needs PostgreSQL (`BENCH_DATABASE_URL` or `DATABASE_URL`, else
 * an embedded server; a fresh database is created and dropped) and Temporal
 * (`TEMPORAL_ADDRESS`, else a dev server is started). `BENCH_OPERATIONS` (default 600) per phase.
 * Run: `npm run bench -- transfers` or `npx tsx bench/transfers.ts`.
 */
import { NativeConnection, Worker } from '@temporalio/worker';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { createLogger } from '../src/logger';
import { createPartner, createUser } from '../src/onboarding';
import { runRoles } from '../src/runtime';
import { generatePartnerKeys, PartnerClient } from '../test/support/partner-client';
import type { BenchResult } from './run';
import { measure, measureInterleaved, runWhenMain, startBenchEnvironment } from './support/harness';

export const CONCURRENCY = 32;
const RECEIVERS = 64;

/** RSS in MiB of the process whose command line contains `needle` (best effort, Linux /proc), else undefined. */
function rssOfProcessMatching(needle: string): number | undefined {
  try {
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
      let commandLine: string;
      try {
        commandLine = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ');
      } catch {
        continue;
      }
      if (!commandLine.includes(needle)) continue;
      const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${entry}/status`, 'utf8'));
      if (match) return Math.round(Number(match[1]) / 1024);
    }
  } catch {
    return undefined;
  }
  return undefined;
}

export async function run(): Promise<BenchResult> {
  const operations = Number(process.env.BENCH_OPERATIONS ?? 600);
  const environment = await startBenchEnvironment('transfers');
  const stops: Array<() => Promise<void>> = [];
  try {
    const temporalAddress = environment.temporalAddress;
    const config = environment.config();
    const platform = await runRoles(config, ['api', 'facade', 'worker'], createLogger('silent'));
    stops.push(() => platform.stop());
    const deps = platform.deps!;

    // The floor: its own worker and task queue, same Temporal server, same process.
    const floorQueue = `bench-floor-${randomBytes(4).toString('hex')}`;
    const floorConnection = await NativeConnection.connect({ address: temporalAddress });
    const floorWorker = await Worker.create({
      connection: floorConnection,
      namespace: config.TEMPORAL_NAMESPACE,
      taskQueue: floorQueue,
      workflowsPath: require.resolve('./workflows/noop'),
      activities: { noop: async () => undefined },
    });
    const floorRunning = floorWorker.run();
    stops.push(async () => {
      floorWorker.shutdown();
      await floorRunning;
      await floorConnection.close();
    });

    const keys = generatePartnerKeys();
    const { credentials } = await createPartner(deps, { name: 'Bench Partner', public_key_pem: keys.publicKeyPem, float_units: 10n ** 12n });
    const partner = new PartnerClient(platform.facadeUrl!, credentials, keys, deps.keys.publicKeyPem);
    if ((await partner.token()).status !== 200) throw new Error('bench token failed');
    const receivers: string[] = [];
    for (let index = 0; index < RECEIVERS; index++) {
      const user = await createUser(deps, { email: `bench${index}@example.com`, first_name: 'Bench', last_name: String(index), currency: 'USD' });
      receivers.push(user.id);
    }

    // Warm up both paths (bundles, connections, JIT).
    const runId = randomBytes(3).toString('hex').toUpperCase();
    let failures = 0;
    const transfer = async (tag: string) => {
      const created = await partner.gateway({
        service: 'create.unified.fundTransfer',
        out_trade_no: `B${runId}${tag}`,
        receiver_id: receivers[Number(tag.replace(/\D/g, '')) % RECEIVERS]!,
        sender_name: 'Bench Sender',
        amount: 0.01,
        currency: 'USD',
      });
      if (created.status !== 200 || created.signValid !== true) {
        failures++;
        return;
      }
      const confirmed = await partner.gateway({
        service: 'confirm.fundTransfer',
        pre_transfer_id: (created.body.data as { pre_transfer_id: string }).pre_transfer_id,
        partner_transaction_id: `T${runId}${tag}`,
      });
      if (confirmed.status !== 200 || confirmed.signValid !== true) failures++;
    };
    const floorOperation = async (tag: string) => {
      const handle = await deps.temporal.client.workflow.start('benchNoopWorkflow', { taskQueue: floorQueue, workflowId: `bench-floor-${runId}-${tag}` });
      await handle.executeUpdate('go');
    };
    await measure(64, CONCURRENCY, (index) => floorOperation(`W${index}`));
    await measure(64, CONCURRENCY, (index) => transfer(`W${index}`));
    failures = 0;

    // Interleaved in three slices each (floor, transfers, floor, …): the dev server's database grows during the run,
    // and whichever phase ran second used to pay for it (single runs of the same code ranged 0.62–0.88).
    const [floor, transfers] = await measureInterleaved(
      [
        { operations, work: (index) => floorOperation(`M${index}`) },
        { operations, work: (index) => transfer(`M${index}`) },
      ],
      CONCURRENCY,
    );
    const check = await deps.ledger.check();
    const rssMiB = Math.round(process.memoryUsage().rss / 1024 / 1024);
    const temporalRssMiB = environment.startedTemporal
      ? rssOfProcessMatching(`--port ${temporalAddress.split(':').pop()}`)
      : undefined;
    const ratio = Math.round((transfers.per_second / floor.per_second) * 100) / 100;
    return {
      name: 'transfers',
      rows: [
        { phase: 'transfers (create + confirm via façade, RSA2 both ways)', per_second: transfers.per_second, p50_ms: transfers.p50_ms, p99_ms: transfers.p99_ms },
        { phase: 'Temporal floor (start + Update running a no-op activity)', per_second: floor.per_second, p50_ms: floor.p50_ms, p99_ms: floor.p99_ms },
      ],
      ratios: [{ label: 'transfers/s vs Temporal floor', value: ratio, goal: 0.8 }],
      metrics: {
        transfers_per_second: transfers.per_second,
        transfers_p50_ms: transfers.p50_ms,
        transfers_p99_ms: transfers.p99_ms,
        floor_per_second: floor.per_second,
        floor_p50_ms: floor.p50_ms,
        floor_p99_ms: floor.p99_ms,
        ratio_transfers_to_floor: ratio,
        failures,
        operations,
        concurrency: CONCURRENCY,
        rss_mib_platform_process: rssMiB,
        ...(temporalRssMiB !== undefined ? { rss_mib_temporal_dev_server: temporalRssMiB } : {}),
      },
      notes: [
        'one process runs api + facade + worker roles, the floor worker and the signing client (2 shared cores)',
        `floor and transfers measured interleaved, 3 slices of ${Math.round(operations / 3)} each (floor first)`,
        `ledger check ok: ${check.ok}`,
      ],
    };
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    await environment.close();
  }
}

runWhenMain(module, run);
