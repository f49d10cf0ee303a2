/**
 * Benchmark `transfers`: completed Area A transfers per second — create.unified.fundTransfer then
 * confirm.fundTransfer through the façade, RSA2 signed by the client and every response verified, one token
 * reused — at concurrency 32 with p50/p99, beside the bare Temporal floor measured in the same run (start a
 * workflow, one Update that runs one no-op activity: bench/workflows/noop.ts on its own task queue and worker).
 * Goal: transfers/s ≥ 0.95 × floor/s on the dev stack, ≥ 0.85 × through a running topology (`BENCH_CLUSTER`).
 *
 * It also counts the RPCs the façade makes per gateway request (the goal is one: TransferService Gateway verifies
 * the partner's proof and answers signed): a façade of this code in the bench process, in front of the same api over
 * the network with a counting client interceptor, takes 16 transfers; the count is the `rpc_per_request` column.
 *
 * One process runs the api, facade and worker roles and the client; its RSS is reported, and the Temporal dev
 * server's when this bench started it. With `BENCH_CLUSTER=<cluster.json>` the transfers go instead through a
 * running `payments cluster up` (its façade port, api and worker processes; bench/support/topology.ts), the floor
 * runs on its Temporal server, and every role process's RSS is reported. Needs PostgreSQL (`BENCH_DATABASE_URL` or `DATABASE_URL`, else
 * an embedded server; a fresh database is created and dropped) and Temporal
 * (`TEMPORAL_ADDRESS`, else a dev server is started). `BENCH_OPERATIONS` (default 600) per phase. `BENCH_LOG_LEVEL`
 * (e.g. `warn`) writes the roles' logs to stderr: what made transfers fail.
 * Run: `npm run bench -- transfers` or `npx tsx bench/transfers.ts`.
 */
import type { Interceptor } from '@connectrpc/connect';
import { NativeConnection, Worker } from '@temporalio/worker';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createFacadeApp, startFacade } from '../rest-facade/app';
import { createAreaRouters } from '../rest-facade/areas';
import type { Config } from '../src/config';
import { createLogger } from '../src/logger';
import { createPartner, createUser } from '../src/onboarding';
import type { PlatformDeps } from '../src/platform-deps';
import { createPlatformClients, type RpcClientCredentials } from '../src/rpc/clients';
import { runRoles } from '../src/runtime';
import { createServiceCredential } from '../src/service-credentials';
import { temporalConnectionOptions } from '../src/temporal/connection-options';
import { generatePartnerKeys, PartnerClient } from '../test/support/partner-client';
import type { BenchResult } from './run';
import {
  completedPerSecond,
  cpuAccount,
  cpuColumns,
  machineCpuGroups,
  measure,
  measureInterleaved,
  pidsMatching,
  rssMiBOf,
  runWhenMain,
  startBenchEnvironment,
} from './support/harness';
import { startBenchTopology } from './support/topology';

export const CONCURRENCY = 32;
const RECEIVERS = 64;

/** RSS in MiB of the process whose command line contains `needle` (best effort, Linux /proc), else undefined. */
function rssOfProcessMatching(needle: string): number | undefined {
  const [pid] = pidsMatching((commandLine) => commandLine.includes(needle));
  return pid === undefined ? undefined : rssMiBOf(pid);
}

/** Transfers the RPC count takes (two gateway requests each). */
const COUNTED_TRANSFERS = 16;

/**
 * RPCs per gateway request: a façade of this code in this process, its Connect clients over the network to `rpcUrl`
 * with a façade credential and an interceptor counting every call, takes COUNTED_TRANSFERS transfers.
 * @returns calls per request and the calls by procedure
 */
async function countRpcsPerGatewayRequest(
  deps: PlatformDeps,
  config: Config,
  rpcUrl: string,
  /** The client certificate an mTLS RPC (a cluster's) wants, PEM texts. */
  tls: RpcClientCredentials['tls'],
  partner: PartnerClient,
  receiver: string,
  tag: string,
): Promise<{ perRequest: number; requests: number; byProcedure: Record<string, number> }> {
  const byProcedure: Record<string, number> = {};
  const counting: Interceptor = (next) => async (request) => {
    const procedure = `${request.service.typeName}/${request.method.name}`;
    byProcedure[procedure] = (byProcedure[procedure] ?? 0) + 1;
    return next(request);
  };
  const { token } = await createServiceCredential(deps.database, { name: `bench counting facade ${tag}`, scopes: ['facade'] });
  const clients = createPlatformClients(rpcUrl, { credentials: { token, tls }, interceptors: [counting], timeoutMs: config.REQUEST_TIMEOUT_SECONDS * 1000 });
  const facade = await startFacade(createFacadeApp({ clients, config, logger: createLogger('silent'), areas: createAreaRouters(config) }), '127.0.0.1', 0);
  const client = new PartnerClient(facade.url, partner.credentials, partner.keys, partner.platformPublicKeyPem);
  client.accessToken = partner.accessToken;
  let requests = 0;
  try {
    for (let index = 0; index < COUNTED_TRANSFERS; index++) {
      const created = await client.gateway({ service: 'create.unified.fundTransfer', out_trade_no: `C${tag}${index}`, receiver_id: receiver, sender_name: 'Bench Sender', amount: 0.01, currency: 'USD' });
      const confirmed = await client.gateway({ service: 'confirm.fundTransfer', pre_transfer_id: (created.body.data as { pre_transfer_id: string }).pre_transfer_id, partner_transaction_id: `CT${tag}${index}` });
      requests += 2;
      if (created.signValid !== true || confirmed.signValid !== true || confirmed.status !== 200) throw new Error(`counted transfer failed: ${confirmed.text}`);
    }
  } finally {
    await facade.close(1);
  }
  const calls = Object.values(byProcedure).reduce((sum, count) => sum + count, 0);
  return { perRequest: Math.round((calls / requests) * 100) / 100, requests, byProcedure };
}

export async function run(): Promise<BenchResult> {
  const operations = Number(process.env.BENCH_OPERATIONS ?? 600);
  const topology = await startBenchTopology();
  const environment = topology ? undefined : await startBenchEnvironment('transfers');
  const stops: Array<() => Promise<void>> = [];
  try {
    let deps: PlatformDeps;
    let facadeUrl: string;
    let rpcUrl: string;
    const config = topology ? topology.config : environment!.config();
    const temporalAddress = config.TEMPORAL_ADDRESS!;
    if (topology) {
      deps = topology.deps;
      facadeUrl = topology.facadeUrl;
      rpcUrl = topology.cluster.rpcUrl;
    } else {
      const platform = await runRoles(config, ['api', 'facade', 'worker'], createLogger(process.env.BENCH_LOG_LEVEL ?? 'silent', 'bench', { write: (line: string) => process.stderr.write(line) }));
      stops.push(() => platform.stop());
      deps = platform.deps!;
      facadeUrl = platform.facadeUrl!;
      rpcUrl = platform.rpcUrl!;
    }
    const runId = randomBytes(3).toString('hex').toUpperCase();

    // The floor: its own worker and task queue, same Temporal server, same process.
    const floorQueue = `bench-floor-${randomBytes(4).toString('hex')}`;
    const floorConnection = await NativeConnection.connect({ address: temporalAddress, ...temporalConnectionOptions(config) });
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
    const { credentials } = await createPartner(deps, { name: `Bench Partner ${runId}`, public_key_pem: keys.publicKeyPem, float_units: 10n ** 12n });
    const partner = new PartnerClient(facadeUrl, credentials, keys, deps.keys.publicKeyPem);
    if ((await partner.token()).status !== 200) throw new Error('bench token failed');
    const receivers: string[] = [];
    for (let index = 0; index < RECEIVERS; index++) {
      const user = await createUser(deps, { email: `bench-${runId.toLowerCase()}-${index}@example.com`, first_name: 'Bench', last_name: String(index), currency: 'USD' });
      receivers.push(user.id);
    }

    // A cluster's RPC speaks mTLS only: the operator's client certificate, with the counting façade's credential.
    const rpcTls = topology && {
      ca: readFileSync(topology.cluster.rpcTls.ca, 'utf8'),
      cert: readFileSync(topology.cluster.rpcTls.cert, 'utf8'),
      key: readFileSync(topology.cluster.rpcTls.key, 'utf8'),
    };
    const rpcCount = await countRpcsPerGatewayRequest(deps, config, rpcUrl, rpcTls || undefined, partner, receivers[0]!, runId);

    // Warm up both paths (bundles, connections, JIT).
    let failures = 0;
    // What failed, by HTTP status and error code: a failed transfer is cheap, so failures would flatter the rate.
    const failureKinds = new Map<string, number>();
    const failed = (answer: { status: number; body: Record<string, unknown>; signValid?: boolean }) => {
      failures++;
      const kind = `${answer.status} ${String(answer.body.error_code ?? (answer.signValid === false ? 'bad signature' : ''))}`.trim();
      failureKinds.set(kind, (failureKinds.get(kind) ?? 0) + 1);
    };
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
        failed(created);
        return;
      }
      const confirmed = await partner.gateway({
        service: 'confirm.fundTransfer',
        pre_transfer_id: (created.body.data as { pre_transfer_id: string }).pre_transfer_id,
        partner_transaction_id: `T${runId}${tag}`,
      });
      if (confirmed.status !== 200 || confirmed.signValid !== true) failed(confirmed);
    };
    const floorOperation = async (tag: string) => {
      const handle = await deps.temporal.client.workflow.start('benchNoopWorkflow', { taskQueue: floorQueue, workflowId: `bench-floor-${runId}-${tag}` });
      await handle.executeUpdate('go');
    };
    await measure(64, CONCURRENCY, (index) => floorOperation(`W${index}`));
    await measure(64, CONCURRENCY, (index) => transfer(`W${index}`));
    failures = 0;
    failureKinds.clear();

    const cpu = cpuAccount(() => machineCpuGroups(topology?.pidsByRole()));
    // Interleaved in three slices each (floor, transfers, floor, …): the dev server's database grows during the run,
    // and whichever phase ran second used to pay for it (single runs of the same code ranged 0.62–0.88).
    const [floor, transfers] = await measureInterleaved(
      [
        { operations, work: (index) => floorOperation(`M${index}`) },
        { operations, work: (index) => transfer(`M${index}`) },
      ],
      CONCURRENCY,
      3,
      cpu,
    );
    const check = await deps.ledger.check();
    const rssMiB = Math.round(process.memoryUsage().rss / 1024 / 1024);
    const rssByRole = topology?.rssByRole() ?? {};
    const temporalRssMiB = environment?.startedTemporal
      ? rssOfProcessMatching(`--port ${temporalAddress.split(':').pop()}`)
      : undefined;
    // Only completed transfers count: a refused one (a rate limit, say) costs a fraction of a transfer.
    const completed = completedPerSecond(transfers, operations, failures);
    const ratio = Math.round((completed / floor.per_second) * 100) / 100;
    return {
      name: 'transfers',
      rows: [
        {
          phase: 'transfers (create + confirm via façade, RSA2 both ways)',
          per_second: completed,
          p50_ms: transfers.p50_ms,
          p99_ms: transfers.p99_ms,
          rpc_per_request: rpcCount.perRequest,
          ...cpuColumns(cpu, 1),
        },
        { phase: 'Temporal floor (start + Update running a no-op activity)', per_second: floor.per_second, p50_ms: floor.p50_ms, p99_ms: floor.p99_ms, ...cpuColumns(cpu, 0) },
      ],
      // The goals of a lean money path: the dev stack (one process, the dev server) within 5 % of the floor, a
      // running topology (its own processes and the full server) within 15 %.
      ratios: [{ label: 'transfers/s vs Temporal floor', value: ratio, goal: topology ? 0.85 : 0.95 }],
      metrics: {
        transfers_per_second: completed,
        transfers_p50_ms: transfers.p50_ms,
        transfers_p99_ms: transfers.p99_ms,
        floor_per_second: floor.per_second,
        floor_p50_ms: floor.p50_ms,
        floor_p99_ms: floor.p99_ms,
        ratio_transfers_to_floor: ratio,
        rpc_calls_per_gateway_request: rpcCount.perRequest,
        failures,
        operations,
        concurrency: CONCURRENCY,
        ...(topology ? { rss_mib_bench_process: rssMiB } : { rss_mib_platform_process: rssMiB }),
        ...Object.fromEntries(Object.entries(rssByRole).map(([role, mib]) => [`rss_mib_${role.replace(/-/g, '_')}`, mib])),
        ...(temporalRssMiB !== undefined ? { rss_mib_temporal_dev_server: temporalRssMiB } : {}),
      },
      notes: [
        topology
          ? `the cluster topology (${topology.cluster.processes.length} role processes: façades at ${topology.facadeUrl} calling the api processes over HTTP/2 with mTLS, workflows on the worker processes); the floor worker and the signing client in the bench process (2 shared cores)`
          : 'one process runs api + facade + worker roles, the floor worker and the signing client (2 shared cores)',
        `floor and transfers measured interleaved, 3 slices of ${Math.round(operations / 3)} each (floor first)`,
        `rpc_per_request: RPCs a façade of this code made for ${rpcCount.requests} gateway requests (${COUNTED_TRANSFERS} transfers, counted by a client interceptor in front of the same api): ${Object.entries(rpcCount.byProcedure).map(([procedure, count]) => `${procedure} ${count}`).join(', ')}`,
        'cpu_ms_*: CPU milliseconds per operation by process, read from /proc around each slice (bench: the bench process; temporal: the Temporal server; postgres: every PostgreSQL process; the rest: the cluster’s role processes)',
        `ledger check ok: ${check.ok}`,
        ...(failures > 0
          ? [`${failures} of ${operations} transfers failed (${[...failureKinds].map(([kind, count]) => `${kind}: ${count}`).join(', ')}); transfers/s counts completed ones only`]
          : []),
      ],
    };
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    await topology?.close();
    await environment?.close();
  }
}

runWhenMain(module, run);
