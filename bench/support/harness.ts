/**
 * What every benchmark shares: latency percentiles, a fixed-count measurement loop, a database server (the one at
 * `BENCH_DATABASE_URL` / `DATABASE_URL`, else an embedded PostgreSQL in a temporary directory) with fresh migrated
 * databases that are dropped afterwards, and Temporal (`TEMPORAL_ADDRESS`, else a dev server on free ports).
 * Lives under bench/support/ so the runner (bench/run.ts) does not take it for a bench.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import pg from 'pg';
import { loadConfig, type Config } from '../../src/config';
import { temporalConnectionOptionsFromEnvironment, temporalSecuritySettings } from '../../src/temporal/connection-options';
import { startEmbeddedPostgres } from '../../src/db/embedded';
import { createDatabase, migrateToLatest } from '../../src/db/knex';
import { freePort, waitForPort } from '../../src/net';
import { startTemporalDevServer, stopChild } from '../../src/temporal/dev-server';

/** The p-th percentile (nearest rank) of ascending `sorted` values; 0 for none. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export const round = (value: number, digits = 2) => Math.round(value * 10 ** digits) / 10 ** digits;

/** Operations per second (0.1) and latency percentiles in milliseconds (0.01). */
export interface Measurement {
  per_second: number;
  p50_ms: number;
  p99_ms: number;
}

/** Runs calls `work(first)` … `work(first + operations - 1)` from `concurrency` loops; returns the seconds taken. */
async function runSlice(
  first: number,
  operations: number,
  concurrency: number,
  work: (index: number) => Promise<void>,
  latencies: number[],
): Promise<number> {
  let next = 0;
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: Math.min(concurrency, operations) }, async () => {
      while (next < operations) {
        const index = first + next++;
        const t0 = process.hrtime.bigint();
        await work(index);
        latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
      }
    }),
  );
  return Number(process.hrtime.bigint() - started) / 1e9;
}

function measurementOf(operations: number, seconds: number, latencies: number[]): Measurement {
  latencies.sort((a, b) => a - b);
  return {
    per_second: round(operations / seconds, 1),
    p50_ms: round(percentile(latencies, 50)),
    p99_ms: round(percentile(latencies, 99)),
  };
}

/** CPU seconds (user + system) process `pid` has used, with its reaped children's; undefined when it is gone. */
export function cpuSecondsOf(pid: number): number | undefined {
  try {
    // Fields after the command name (which may hold spaces, so cut at its closing parenthesis): utime is the 12th.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = [11, 12, 13, 14].reduce((sum, at) => sum + Number(fields[at]), 0);
    return ticks / CLOCK_TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

/** Linux's USER_HZ, which /proc/<pid>/stat counts in on every architecture Node runs on. */
const CLOCK_TICKS_PER_SECOND = 100;

/** Processes whose command line passes `test` (Linux /proc; arguments joined by spaces), this one excluded. */
export function pidsMatching(test: (commandLine: string) => boolean): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (test(readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' '))) found.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** RSS in MiB of process `pid` (Linux /proc), or undefined when it is gone. */
export function rssMiBOf(pid: number): number | undefined {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Math.round(Number(match[1]) / 1024) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * CPU time per operation of each group of processes, per phase: `begin` and `end` bracket each slice of
 * measureInterleaved. Where a machine's cores are all busy, a phase's rate is set by what its operations cost in
 * all, and this says who spends it (the bench process, each role, the Temporal server, PostgreSQL).
 */
export interface CpuAccount {
  begin(): void;
  end(phase: number, operations: number): void;
  /** Milliseconds of CPU per operation, by group, for phase `phase`. */
  perOperationMs(phase: number): Record<string, number>;
}

/** `groups`: a name and the pids summed under it (read at each `begin`, so that respawned processes count). */
export function cpuAccount(groups: () => Record<string, number[]>): CpuAccount {
  let started: Record<string, number> = {};
  const totals: Array<{ operations: number; seconds: Record<string, number> }> = [];
  const read = () =>
    Object.fromEntries(Object.entries(groups()).map(([name, pids]) => [name, pids.reduce((sum, pid) => sum + (cpuSecondsOf(pid) ?? 0), 0)]));
  return {
    begin: () => {
      started = read();
    },
    end: (phase, operations) => {
      const now = read();
      const total = (totals[phase] ??= { operations: 0, seconds: {} });
      total.operations += operations;
      for (const [name, seconds] of Object.entries(now)) total.seconds[name] = (total.seconds[name] ?? 0) + seconds - (started[name] ?? seconds);
    },
    perOperationMs: (phase) => {
      const total = totals[phase];
      if (!total || total.operations === 0) return {};
      return Object.fromEntries(Object.entries(total.seconds).map(([name, seconds]) => [name, round((seconds * 1000) / total.operations)]));
    },
  };
}

/**
 * The processes a bench on this machine shares its cores with: itself, the Temporal server (dev or full, by its
 * cached binary's path) and PostgreSQL (every `postgres` process; the postmaster's count includes its exited backends).
 */
export function machineCpuGroups(extra: Record<string, number[]> = {}): Record<string, number[]> {
  const temporal = pidsMatching((line) => /temporal-(cli|server)-v[^ ]*\/(temporal|server) /.test(line));
  const postgres = pidsMatching((line) => /^postgres[: ]|\/postgres /.test(line));
  return { bench: [process.pid], ...extra, temporal, postgres };
}

/**
 * Operations per second that completed, of a phase whose `failures` of `operations` failed: a refused operation (a
 * rate limit, an unavailable dependency) costs a fraction of a done one, so counting it would flatter the rate.
 */
export function completedPerSecond(measurement: Measurement, operations: number, failures: number): number {
  if (failures < 0 || failures > operations) throw new RangeError(`failures ${failures} outside 0..${operations}`);
  return round((measurement.per_second * (operations - failures)) / operations, 1);
}

/** A phase's CPU per operation as report columns: `cpu_ms_all` and `cpu_ms_<group>` (milliseconds per operation). */
export function cpuColumns(cpu: CpuAccount, phase: number): Record<string, number> {
  const groups = cpu.perOperationMs(phase);
  const all = round(Object.values(groups).reduce((sum, ms) => sum + ms, 0));
  return { cpu_ms_all: all, ...Object.fromEntries(Object.entries(groups).map(([name, ms]) => [`cpu_ms_${name}`, ms])) };
}

/** Runs `operations` calls of `work(index)` from `concurrency` loops and measures them. */
export async function measure(operations: number, concurrency: number, work: (index: number) => Promise<void>): Promise<Measurement> {
  const [measurement] = await measureInterleaved([{ operations, work }], concurrency, 1);
  return measurement!;
}

/**
 * Measures phases interleaved: each phase's `operations` are cut into `slices` runs taken in turn (A B A B A B), so
 * that drift on a shared machine (a Temporal database growing, a neighbour's load) weighs on every phase alike
 * instead of on whichever ran last. A phase's rate is its operations over the summed duration of its slices (each
 * with its `settle` step: work a phase leaves running after its answers, waited for and counted as the phase's own
 * time so that it neither flatters the phase nor slows the next one); its percentiles are over all its latencies.
 * Indexes passed to `work` run from 0 to operations − 1 once each.
 */
export async function measureInterleaved(
  phases: Array<{ operations: number; work: (index: number) => Promise<void>; settle?: () => Promise<void> }>,
  concurrency: number,
  slices = 3,
  cpu?: CpuAccount,
): Promise<Measurement[]> {
  const state = phases.map(() => ({ done: 0, seconds: 0, latencies: [] as number[] }));
  for (let slice = 0; slice < slices; slice++) {
    for (const [at, phase] of phases.entries()) {
      const own = state[at]!;
      const until = Math.round((phase.operations * (slice + 1)) / slices);
      const count = until - own.done;
      cpu?.begin();
      own.seconds += await runSlice(own.done, count, concurrency, phase.work, own.latencies);
      own.done = until;
      if (phase.settle) {
        const started = process.hrtime.bigint();
        await phase.settle();
        own.seconds += Number(process.hrtime.bigint() - started) / 1e9;
      }
      cpu?.end(at, count);
    }
  }
  return phases.map((phase, at) => measurementOf(phase.operations, state[at]!.seconds, state[at]!.latencies));
}

export interface BenchDatabaseServer {
  /** Where the databases live, for the report ("127.0.0.1:5432" or "embedded PostgreSQL"). */
  where: string;
  /** Creates a fresh database named bench_<name>_<random>, migrated; returns its URL. */
  createDatabase(): Promise<string>;
  /** Drops every database created here, then stops the embedded server if one was started. */
  stop(): Promise<void>;
}

async function onServer(serverUrl: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: `${serverUrl}/postgres` });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

export async function startBenchDatabaseServer(name: string): Promise<BenchDatabaseServer> {
  const configured = process.env.BENCH_DATABASE_URL ?? process.env.DATABASE_URL;
  let serverUrl: string;
  let where: string;
  let stopServer = async (): Promise<void> => undefined;
  if (configured) {
    const url = new URL(configured);
    url.pathname = '';
    serverUrl = url.toString().replace(/\/$/, '');
    where = url.host;
  } else {
    const directory = mkdtempSync(path.join(os.tmpdir(), `bench-${name}-`));
    chmodSync(directory, 0o755); // as root, PostgreSQL runs as the postgres user, which must enter this directory
    const embedded = await startEmbeddedPostgres({ directory: path.join(directory, 'postgres'), persistent: false });
    serverUrl = embedded.serverUrl;
    where = 'embedded PostgreSQL';
    stopServer = async () => {
      await embedded.stop();
      rmSync(directory, { recursive: true, force: true });
    };
  }
  const created: string[] = [];
  return {
    where,
    async createDatabase() {
      const database = `bench_${name}_${randomBytes(4).toString('hex')}`;
      await onServer(serverUrl, `CREATE DATABASE ${database}`);
      created.push(database);
      const url = `${serverUrl}/${database}`;
      const migrator = createDatabase(url, 1);
      try {
        await migrateToLatest(migrator);
      } finally {
        await migrator.destroy();
      }
      return url;
    },
    async stop() {
      for (const database of created) await onServer(serverUrl, `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`).catch(() => undefined);
      await stopServer();
    },
  };
}

/** A migrated database, Temporal, and a key directory for one platform under benchmark. */
export interface BenchEnvironment {
  databaseUrl: string;
  databaseWhere: string;
  temporalAddress: string;
  /** True when this bench started the Temporal dev server (so its RSS can be reported). */
  startedTemporal: boolean;
  keyDirectory: string;
  /** The platform configuration for this environment: its own task queue, free ports, silent logs, plus `overrides`. */
  config(overrides?: Record<string, string>): Config;
  /** Registers a cleanup step; `close` runs them in reverse, then drops the database. */
  defer(step: () => Promise<void>): void;
  close(): Promise<void>;
}

export async function startBenchEnvironment(name: string): Promise<BenchEnvironment> {
  const steps: Array<() => Promise<void>> = [];
  const server = await startBenchDatabaseServer(name);
  steps.push(() => server.stop());
  const close = async () => {
    for (const step of steps.reverse()) await step().catch(() => undefined);
  };
  try {
    const databaseUrl = await server.createDatabase();
    let temporalAddress = process.env.TEMPORAL_ADDRESS;
    if (!temporalAddress) {
      const port = await freePort();
      const temporal = await startTemporalDevServer({
        dataDirectory: mkdtempSync(path.join(os.tmpdir(), 'bench-temporal-')),
        port,
        uiPort: await freePort(),
      });
      steps.push(() => temporal.stop());
      temporalAddress = `127.0.0.1:${port}`;
    }
    const keyDirectory = mkdtempSync(path.join(os.tmpdir(), 'bench-keys-'));
    const address = temporalAddress;
    // On a Temporal server that outlives the bench, what its workers leave open would wait forever on a task queue
    // nobody polls again (payins' hour-long expiry timers, a pre-transfer never confirmed): terminated at the end.
    const taskQueues: string[] = [];
    if (process.env.TEMPORAL_ADDRESS) {
      steps.push(async () => {
        await terminateLeftovers(address, process.env.TEMPORAL_NAMESPACE ?? 'default', taskQueues);
      });
    }
    return {
      databaseUrl,
      databaseWhere: server.where,
      temporalAddress,
      startedTemporal: !process.env.TEMPORAL_ADDRESS,
      keyDirectory,
      config: (overrides = {}) => {
        const taskQueue = overrides.TEMPORAL_TASK_QUEUE ?? `bench-${randomBytes(4).toString('hex')}`;
        taskQueues.push(taskQueue);
        return loadConfig({
          DATABASE_URL: databaseUrl,
          TEMPORAL_ADDRESS: address,
          TEMPORAL_TASK_QUEUE: taskQueue,
          HTTP_PORT: '0',
          RPC_PORT: '0',
          LOG_LEVEL: 'silent',
          // The benches' own sandbox upstreams and test cards: test mode, an explicit choice.
          PAYMENTS_MODE: 'test',
          PLATFORM_KEY_DIR: keyDirectory,
          // The bench's merchant receivers listen on loopback.
          OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'true',
          // Worker tuning under test: WORKER_* and TEMPORAL_EAGER_START from the environment (docs/operations.md
          // "Worker tuning").
          ...Object.fromEntries(
            Object.entries(process.env).filter(([key, value]) => (key.startsWith('WORKER_') || key === 'TEMPORAL_EAGER_START') && value !== undefined),
          ),
          // A cluster's mTLS frontend (TEMPORAL_ADDRESS set to it): its client certificate, as for every client.
          ...temporalSecuritySettings(),
          ...overrides,
        });
      },
      defer: (step) => steps.push(step),
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/** Most leftover workflows terminated at once, and the longest the clean-up may take. */
const TERMINATE_CONCURRENCY = 16;
const TERMINATE_BUDGET_MS = 120_000;

/**
 * Terminates every running workflow on `taskQueues` of the Temporal server at `address` (visibility may lag a
 * start by a moment, so it lists again until a pass finds none, within TERMINATE_BUDGET_MS). Returns how many.
 */
export async function terminateLeftovers(address: string, namespace: string, taskQueues: string[]): Promise<number> {
  if (taskQueues.length === 0) return 0;
  const connection = await Connection.connect({ address, ...temporalConnectionOptionsFromEnvironment() });
  const client = new Client({ connection, namespace });
  const query = `(${taskQueues.map((queue) => `TaskQueue = '${queue}'`).join(' OR ')}) AND ExecutionStatus = 'Running'`;
  const until = Date.now() + TERMINATE_BUDGET_MS;
  let terminated = 0;
  try {
    for (let pass = 0; pass < 5 && Date.now() < until; pass++) {
      const ids: string[] = [];
      for await (const workflow of client.workflow.list({ query })) ids.push(workflow.workflowId);
      if (ids.length === 0) break;
      let next = 0;
      await Promise.all(
        Array.from({ length: Math.min(TERMINATE_CONCURRENCY, ids.length) }, async () => {
          while (next < ids.length && Date.now() < until) {
            const id = ids[next++]!;
            // Closed meanwhile (a late confirm, its expiry) is as good as terminated.
            await client.workflow.getHandle(id).terminate('the benchmark that started it has finished').then(
              () => terminated++,
              () => undefined,
            );
          }
        }),
      );
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  } finally {
    await connection.close();
  }
  if (terminated > 0) process.stderr.write(`terminated ${terminated} workflows the bench left running on ${taskQueues.join(', ')}\n`);
  return terminated;
}

/** Lets a bench file run on its own (`npx tsx bench/<name>.ts`): prints the result as JSON. */
export function runWhenMain(module: NodeModule, run: () => Promise<unknown>): void {
  if (require.main !== module) return;
  run().then(
    (result) => {
      process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
      process.exit(0);
    },
    (error: unknown) => {
      process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
      process.exit(1);
    },
  );
}

/** A TypeScript entry run by Node in a process of its own (`--import tsx`), once it listens on 127.0.0.1:`port`. */
async function spawnListening(
  nodeArguments: string[],
  env: Record<string, string | undefined>,
  port: number,
  timeoutSeconds: number,
): Promise<{ child: ChildProcess; stop(): Promise<void> }> {
  const child = spawn(process.execPath, nodeArguments, { env, stdio: ['ignore', 'ignore', 'inherit'] });
  try {
    await waitForPort('127.0.0.1', port, timeoutSeconds);
  } catch (error) {
    await stopChild(child);
    throw error;
  }
  return { child, stop: () => stopChild(child) };
}

/**
 * `payments serve --roles api,facade` in a process of its own, on free ports, with `config`'s database, Temporal
 * task queue and keys plus `env` (so the bench client does not share the measured event loop). Resolves once the
 * façade listens. `nodeOptions`: e.g. `--cpu-prof`.
 */
export async function startServeProcess(
  config: Config,
  env: Record<string, string> = {},
  nodeOptions: string[] = [],
): Promise<{ facadeUrl: string; child: ChildProcess; stop(): Promise<void> }> {
  const [httpPort, rpcPort] = [await freePort(), await freePort()];
  const started = await spawnListening(
    [...nodeOptions, '--import', 'tsx', path.join(__dirname, '..', '..', 'src', 'cli', 'main.ts'), 'serve', '--roles', 'api,facade'],
    {
      ...process.env,
      DATABASE_URL: config.DATABASE_URL,
      TEMPORAL_ADDRESS: config.TEMPORAL_ADDRESS,
      TEMPORAL_TASK_QUEUE: config.TEMPORAL_TASK_QUEUE,
      HTTP_PORT: String(httpPort),
      RPC_PORT: String(rpcPort),
      LOG_LEVEL: 'silent',
      PLATFORM_KEY_DIR: config.PLATFORM_KEY_DIR,
      PAYMENTS_MODE: config.PAYMENTS_MODE,
      RPC_URL: '',
      ...env,
    },
    httpPort,
    120,
  );
  return { facadeUrl: `http://127.0.0.1:${httpPort}`, ...started };
}

/**
 * The wallet bench's HTTP floor (bench/support/http-floor.ts) in a process of its own, started as the measured one is
 * (`--import tsx`), verifying signatures with `publicKeyPem`. Resolves once it listens.
 */
export async function startFloorProcess(publicKeyPem: string): Promise<{ url: string; child: ChildProcess; stop(): Promise<void> }> {
  const port = await freePort();
  const started = await spawnListening(
    ['--import', 'tsx', path.join(__dirname, 'http-floor.ts')],
    { ...process.env, BENCH_FLOOR_PORT: String(port), BENCH_FLOOR_PUBLIC_KEY: publicKeyPem },
    port,
    60,
  );
  return { url: `http://127.0.0.1:${port}`, ...started };
}

/** Round trips to PostgreSQL by first keyword (`begin`, `select`, `with`, …), and their total. */
export type RoundTrips = Record<string, number>;

/**
 * The round trips a serving process sent to PostgreSQL so far, scraped from its `/metrics`
 * (`payments_db_round_trips_total{statement}`, one per query its pool sent, src/metrics.ts).
 */
export async function scrapeRoundTrips(metricsUrl: string): Promise<RoundTrips> {
  const text = await (await fetch(metricsUrl)).text();
  const counts: RoundTrips = {};
  for (const match of text.matchAll(/^payments_db_round_trips_total\{[^}]*statement="([a-z]+)"[^}]*\} ([0-9.e+]+)$/gm)) {
    counts[match[1]!] = (counts[match[1]!] ?? 0) + Number(match[2]);
  }
  return counts;
}

/** Counts the queries `database` sends from now on (in this process), by first keyword. */
export function countRoundTrips(database: { on(event: 'query', listener: (query: { sql?: string }) => void): unknown }): () => RoundTrips {
  const counts: RoundTrips = {};
  database.on('query', (query) => {
    const keyword = /^\s*([A-Za-z]+)/.exec(query.sql ?? '')?.[1]?.toLowerCase() ?? 'other';
    counts[keyword] = (counts[keyword] ?? 0) + 1;
  });
  return () => ({ ...counts });
}

/** Per operation: (after − before) ÷ operations, by keyword, with `total`; e.g. `{begin: 1, with: 2, commit: 1, total: 4}`. */
export function roundTripsPerOperation(before: RoundTrips, after: RoundTrips, operations: number): RoundTrips {
  const per: RoundTrips = {};
  let total = 0;
  for (const keyword of Object.keys(after).sort()) {
    const count = (after[keyword]! - (before[keyword] ?? 0)) / operations;
    if (count <= 0) continue;
    per[keyword] = round(count, 2);
    total += count;
  }
  per.total = round(total, 2);
  return per;
}

/** `{begin: 1, with: 2, commit: 1, total: 4}` as `4 (begin 1, with 2, commit 1)`. */
export function describeRoundTrips(per: RoundTrips): string {
  const { total, ...rest } = per;
  return `${total} (${Object.entries(rest).map(([keyword, count]) => `${keyword} ${count}`).join(', ')})`;
}
