/**
 * Benchmark `wallet`: Area C `transfer` actions per second and p50/p99 latency through the façade
 * (merchant headers, session and RSA2 signature verified, one Transfer RPC, the signed body claimed and answered once, one ledger transaction) at concurrency 32,
 * beside the ledger's own transfer rate (direct `ledger.transfer`, same concurrency) measured in the same run.
 * Two façade phases: every transfer of **one** merchant (a burst of one owner: its events, its request journal), and
 * the same spread over `BENCH_WALLET_MERCHANTS` (default 32) merchants.
 * Goals: façade rate ≥ 0.6 × ledger rate, both ways; one merchant ≥ 0.9 × 32 merchants.
 * A fourth phase, the HTTP floor (bench/support/http-floor.ts), sends the same signed bodies to a process that only
 * reads, parses, verifies and answers them: its CPU bounds what any serving process of this design could cost, and
 * the notes give the façade ÷ ledger ratio the machine would allow with a serving process that cheap.
 * Each path's round trips to PostgreSQL per operation are counted, not estimated: the serving process's
 * `payments_db_round_trips_total` (its /metrics, one per query its pool sent) before and after the phase, and for the
 * direct ledger call every query of the bench process's pool.
 *
 * PostgreSQL: `BENCH_DATABASE_URL` or `DATABASE_URL` (a fresh database is created and dropped), else an embedded
 * server in a temporary directory and Temporal (`TEMPORAL_ADDRESS`, else a dev server is started).
 * `BENCH_OPERATIONS` (default 2000) operations per phase; `BENCH_PROFILE_DIR` writes a CPU profile of the measured
 * process there. Run: `npx tsx bench/wallet.ts` (or via bench/run.ts).
 * The client pre-signs its request bodies (a merchant signs on its own machine); the platform verifies each request.
 */
import { createPublicKey } from 'node:crypto';
import { createLogger } from '../src/logger';
import { getUser } from '../src/onboarding';
import { runRoles } from '../src/runtime';
import { signRequestParameters } from '../src/crypto/rsa2';
import { MerchantClient, onboardMerchantClient } from '../test/support/merchant-client';
import type { BenchResult } from './run';
import { freePort } from '../src/net';
import {
  countRoundTrips,
  cpuAccount,
  cpuColumns,
  machineCpuGroups,
  describeRoundTrips,
  measure,
  measureInterleaved,
  roundTripsPerOperation,
  runWhenMain,
  scrapeRoundTrips,
  startBenchEnvironment,
  startFloorProcess,
  startServeProcess,
  type Measurement,
  type RoundTrips,
} from './support/harness';


export const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const USERS = 64;
const MERCHANTS = Number(process.env.BENCH_WALLET_MERCHANTS ?? 32);
/** Operations per path of the warm-up, and of the pass counting round trips. */
const EXTRA = 96;

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
    const metricsPort = await freePort();
    const metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    const platform = await startServeProcess(config, { METRICS_PORT: String(metricsPort), METRICS_HOST: '127.0.0.1' }, profile);
    stops.push(() => platform.stop());
    const { child } = platform;

    const { client, credentials } = await onboardMerchantClient(deps, platform.facadeUrl, 'Bench Merchant');
    if ((await client.login()).status !== 200) throw new Error('bench login failed');
    // The HTTP floor (bench/support/http-floor.ts): the same client, headers and signed bodies against a process that
    // only reads, parses and verifies them and answers, started like the measured one.
    const floor = await startFloorProcess(createPublicKey(credentials.private_key!).export({ type: 'spki', format: 'pem' }) as string);
    stops.push(() => floor.stop());
    const floorClient = new MerchantClient({ ...client.options, baseUrl: floor.url });
    floorClient.token = client.token;
    const settlement = await deps.ledger.platformAccount('settlement', 'USD');
    const fundedUser = async (merchantClient: typeof client, label: string) => {
      const created = await merchantClient.action('create_user', {
        email: `bench${label}@example.com`, first_name: 'Bench', last_name: label, address: 'Phnom Penh', currency: 'USD',
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
      return { id: user.id, account: user.wallet_account_id };
    };
    const users: Array<{ id: string; account: string }> = [];
    for (let index = 0; index < USERS; index++) users.push(await fundedUser(client, String(index)));
    // The spread phase: MERCHANTS merchants, two users each.
    const spread: Array<{ client: typeof client; private_key: string; users: Array<{ id: string; account: string }> }> = [];
    for (let index = 0; index < MERCHANTS; index++) {
      const onboarded = await onboardMerchantClient(deps, platform.facadeUrl, `Bench Merchant ${index}`);
      if ((await onboarded.client.login()).status !== 200) throw new Error('bench login failed');
      spread.push({
        client: onboarded.client,
        private_key: onboarded.credentials.private_key!,
        users: [await fundedUser(onboarded.client, `m${index}a`), await fundedUser(onboarded.client, `m${index}b`)],
      });
    }
    // The same account contention in every phase: at c = 32 the operations in flight use 32 disjoint pairs of
    // accounts (one merchant: its users 2k and 2k+1; 32 merchants: each one's two users), alternating direction, so
    // that one merchant against 32 merchants measures the owner, not the accounts' locks.
    const pair = (index: number) => {
      const k = index % (USERS / 2);
      const [a, b] = [users[2 * k]!, users[2 * k + 1]!];
      return (Math.floor(index / (USERS / 2)) % 2 === 0 ? [a, b] : [b, a]) as readonly [typeof a, typeof a];
    };

    // A merchant signs on its own machine: sign every body up front, each a new movement with its own request_id (a
    // repeated signed body is answered from its idempotency record and moves nothing); the platform verifies each.
    // Indexes: the measured operations, then the warm-up's, then the counting pass's (each a new movement).
    const total = operations + 2 * EXTRA;
    const signedBodies = new Map<number, string>();
    for (let index = 0; index < total; index++) {
      const [from, to] = pair(index);
      const body = { service: 'transfer', from_user_id: from.id, to_user_id: to.id, amount: 0.01, currency: 'USD', request_id: `bench-${index}` };
      signedBodies.set(index, JSON.stringify(signRequestParameters(body, credentials.private_key!)));
    }
    const spreadBodies = new Map<number, { client: typeof client; body: string }>();
    for (let index = 0; index < total; index++) {
      const merchant = spread[index % spread.length]!;
      const [from, to] = Math.floor(index / spread.length) % 2 === 0 ? merchant.users : [merchant.users[1]!, merchant.users[0]!];
      const body = { service: 'transfer', from_user_id: from!.id, to_user_id: to!.id, amount: 0.01, currency: 'USD', request_id: `bench-spread-${index}` };
      spreadBodies.set(index, { client: merchant.client, body: JSON.stringify(signRequestParameters(body, merchant.private_key)) });
    }
    let failures = 0;
    let floorFailures = 0;
    const paths: Array<(index: number) => Promise<void>> = [
      async (index) => {
        const [from, to] = pair(index);
        await deps.ledger.transfer({
          idempotency_key: `bench-ledger-${index}`,
          description: 'bench',
          postings: [
            { account_id: from.account, amount_units: -1n },
            { account_id: to.account, amount_units: 1n },
          ],
        });
      },
      async (index) => {
        if ((await client.post('/do-action', {}, { raw: signedBodies.get(index)! })).status !== 200) failures++;
      },
      async (index) => {
        const { client: merchantClient, body } = spreadBodies.get(index)!;
        if ((await merchantClient.post('/do-action', {}, { raw: body })).status !== 200) failures++;
      },
      async (index) => {
        if ((await floorClient.post('/do-action', {}, { raw: signedBodies.get(index)! })).status !== 200) floorFailures++;
      },
    ];
    // Warm-up (not measured): every path's code compiled and its pools' connections prepared before any figure, so
    // that the first phase does not pay for the others' start.
    for (const path of paths) await measure(EXTRA, CONCURRENCY, (index) => path(operations + index));
    // CPU per operation by process (bench = the client and, for the direct ledger call, the ledger; serve = the
    // measured api + façade process; postgres; temporal): phase 0 the direct ledger, 1 one merchant, 2 many merchants.
    // The phases interleaved in 3 slices each, so that a neighbour's load weighs on all of them alike.
    const machine = cpuAccount(() => machineCpuGroups({ serve: [child.pid!], floor: [floor.child.pid!] }));
    const [ledger, oneSample, manySample, floorSample] = await measureInterleaved(
      paths.map((work) => ({ operations, work })),
      CONCURRENCY,
      3,
      machine,
    );
    // Round trips per operation, counted in a pass of their own (counts, not times): the serving process's
    // `payments_db_round_trips_total` around each façade phase, the bench pool's queries around the ledger's.
    const localTrips = countRoundTrips(deps.database);
    const countPass = async (path: (index: number) => Promise<void>, read: () => Promise<RoundTrips>) => {
      const before = await read();
      await measure(EXTRA, CONCURRENCY, (index) => path(operations + EXTRA + index));
      return roundTripsPerOperation(before, await read(), EXTRA);
    };
    const ledgerTrips = await countPass(paths[0]!, async () => localTrips());
    const one = { sample: oneSample!, trips: await countPass(paths[1]!, () => scrapeRoundTrips(metricsUrl)) };
    const many = { sample: manySample!, trips: await countPass(paths[2]!, () => scrapeRoundTrips(metricsUrl)) };
    const serveMs = (phase: number) => machine.perOperationMs(phase).serve ?? 0;
    const ledgerCpuMs = machine.perOperationMs(0).bench ?? 0;
    // A floor that refused its requests did less than the work it stands for: its figure would mean nothing.
    if (floorFailures > 0) throw new Error(`the HTTP floor refused ${floorFailures} signed bodies`);
    const check = await deps.ledger.check();
    // The machine's CPU per operation, every process counted: on two shared cores the rates are CPU-bound, so the
    // ratio of two paths' rates is close to the inverse ratio of their CPU (the model below is checked on the measured
    // façade), and the floor bounds what any serving process of this design could reach.
    const allMs = (phase: number) => Object.values(machine.perOperationMs(phase)).reduce((sum, ms) => sum + ms, 0);
    const floorMs = machine.perOperationMs(3).floor ?? 0;
    const modelRatio = allMs(0) / allMs(1);
    const ceilingRatio = allMs(0) / (allMs(1) - serveMs(1) + floorMs);
    const row = (label: string, sample: Measurement, trips: Record<string, number>, phase: number) => ({
      path: label,
      concurrency: CONCURRENCY,
      operations,
      ...sample,
      round_trips: trips.total ?? 0,
      ...cpuColumns(machine, phase),
    });
    return {
      name: 'wallet',
      rows: [
        row('façade /do-action transfer, one merchant', one.sample, one.trips, 1),
        row(`façade /do-action transfer, ${MERCHANTS} merchants`, many.sample, many.trips, 2),
        row('ledger.transfer', ledger!, ledgerTrips, 0),
        row('HTTP floor: Koa, body read, RSA2 verified, answer', floorSample!, {}, 3),
      ],
      ratios: [
        { label: 'façade transfer ÷ ledger transfer (c=32, one merchant)', value: one.sample.per_second / ledger!.per_second, goal: 0.6 },
        { label: `façade transfer ÷ ledger transfer (c=32, ${MERCHANTS} merchants)`, value: many.sample.per_second / ledger!.per_second, goal: 0.6 },
        { label: `façade transfer, one merchant ÷ ${MERCHANTS} merchants (c=32)`, value: one.sample.per_second / many.sample.per_second, goal: 0.9 },
      ],
      notes: [
        'façade path (own process: payments serve --roles api,facade): HTTP + Koa + one Transfer RPC through the in-process transport (server interceptors, message copies, no encoding; merchant headers, session and both users of the transfer cached AUTH_CACHE_SECONDS; RSA2 signature verified every time; the body parsed again and bound by the api) + the signed body’s idempotency claim and answer + the ledger transfer + its event + the request journal',
        `round trips to PostgreSQL per operation (counted): façade transfer, one merchant ${describeRoundTrips(one.trips)}; ${MERCHANTS} merchants ${describeRoundTrips(many.trips)}; direct ledger.transfer ${describeRoundTrips(ledgerTrips)} (the serving process's counts include its background work: the outbox dispatcher, the event sequencer, a metrics scrape)`,
        `failed façade requests: ${failures}; ledger check ok after the run: ${check.ok}`,
        'cpu_ms_*: CPU milliseconds per operation by process, from /proc around each phase (bench: the client, and the ledger itself for the direct call; serve: the api + façade process; postgres: every PostgreSQL process; temporal: its server, idle here)',
        `CPU per operation (less noisy than rates on a shared machine): façade process ${serveMs(1).toFixed(2)} ms (one merchant), ${serveMs(2).toFixed(2)} ms (${MERCHANTS} merchants); ledger.transfer (bench process, client included) ${ledgerCpuMs.toFixed(2)} ms`,
        `HTTP floor (bench/support/http-floor.ts, own process): the same client, headers and signed bodies, read, parsed, verified and answered, nothing else: ${floorMs.toFixed(2)} ms of its process's CPU per request (façade process ÷ floor ${(serveMs(1) / floorMs).toFixed(1)}×); failed floor requests: ${floorFailures}`,
        `CPU-bound model (rates ≈ inverse CPU per operation, every process): façade ÷ ledger predicted ${modelRatio.toFixed(2)}× (measured ${(one.sample.per_second / ledger!.per_second).toFixed(2)}×); with a serving process costing only the HTTP floor, at most ${ceilingRatio.toFixed(2)}× (the client, PostgreSQL and the rest as measured)`,
        `phases interleaved in 3 slices each (ledger, one merchant, ${MERCHANTS} merchants, HTTP floor), after a warm-up of ${EXTRA} operations per path; round trips counted in a separate pass of ${EXTRA} operations per path`,
      ],
    };
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    await environment.close();
  }
}

runWhenMain(module, run);
