/**
 * A platform of separate processes for the fault-injection suite (test/faults): its own embedded PostgreSQL and
 * Temporal dev server (both restartable on the same port and data), one `payments serve --roles api,facade`
 * process, one `payments serve --roles worker` process, the sandbox upstream and a merchant receiver. Every process
 * can be killed with SIGKILL and started again; the test process only sends requests and reads the database.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createDatabase, migrateToLatest, type Knex } from '../../src/db/knex';
import { freePort, waitForPort } from '../../src/net';
import { createPlatformClients, type PlatformClients } from '../../src/rpc/clients';
import { startSandboxUpstream, type SandboxUpstream } from '../../src/sandbox/upstream';
import { createServiceCredential, OPERATOR_SCOPES } from '../../src/service-credentials';
import { ensureTemporalCli } from '../../src/temporal/cli-binary';
import { DEV_SERVER_TUNING } from '../../src/temporal/dev-server';
import { devServerSearchAttributeArgs } from '../../src/temporal/search-attributes';
import { startMerchantReceiver, type MerchantReceiver } from './merchant-receiver';

const MAIN = path.resolve(__dirname, '../../src/cli/main.ts');
const PG_HOST = path.resolve(__dirname, 'pg-host.ts');

/** An embedded PostgreSQL run by test/support/pg-host.ts in its own process. */
export interface HostedPostgres {
  url: string;
  /** Fast shutdown, down `downSeconds`, then up again on the same port and data. */
  restart(downSeconds: number): Promise<void>;
  stop(): Promise<void>;
}

async function startHostedPostgres(directory: string): Promise<HostedPostgres> {
  const child = spawn(process.execPath, ['--import', 'tsx', PG_HOST, directory], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const lines: string[] = [];
  const waiters: Array<(line: string) => void> = [];
  let buffer = '';
  child.stdout.on('data', (chunk: Buffer) => {
    buffer += chunk.toString();
    let index: number;
    while ((index = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, index);
      buffer = buffer.slice(index + 1);
      const waiter = waiters.shift();
      if (waiter) waiter(line);
      else lines.push(line);
    }
  });
  const nextLine = (seconds: number) =>
    new Promise<string>((resolve, reject) => {
      const queued = lines.shift();
      if (queued !== undefined) return resolve(queued);
      const timer = setTimeout(() => reject(new Error(`pg-host: no answer within ${seconds} s: ${stderr.slice(-500)}`)), seconds * 1000);
      waiters.push((line) => {
        clearTimeout(timer);
        resolve(line);
      });
    });
  const { url } = JSON.parse(await nextLine(120)) as { url: string };
  return {
    url,
    async restart(downSeconds) {
      child.stdin.write(`restart ${downSeconds}\n`);
      await nextLine(120);
    },
    async stop() {
      child.stdin.write('stop\n');
      await nextLine(120).catch(() => undefined);
      child.kill();
    },
  };
}
export const FAULT_UPSTREAM = { api_key: 'fault-upstream-key', webhook_secret: 'fault-upstream-secret' };

/** A child process that can be started, killed and started again with the same command. */
export class Restartable {
  private child: ChildProcess | undefined;
  starts = 0;

  constructor(
    readonly name: string,
    private readonly command: () => { file: string; args: string[]; env?: NodeJS.ProcessEnv },
    private readonly ready: (child: ChildProcess) => Promise<void>,
  ) {}

  async start(): Promise<void> {
    const { file, args, env } = this.command();
    const child = spawn(file, args, { env: env ?? process.env, stdio: ['ignore', 'ignore', 'pipe'], detached: true });
    this.child = child;
    this.starts += 1;
    const exited = new Promise<never>((_, reject) => child.once('exit', (code, signal) => reject(new Error(`${this.name} exited while starting (${code ?? signal})`))));
    exited.catch(() => undefined);
    await Promise.race([this.ready(child), exited]);
  }

  /** SIGKILL to the process group (no drain), then waits for the exit. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      child.kill('SIGKILL');
    }
    await exited;
  }

  /** SIGTERM (graceful), SIGKILL after 15 s. */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.kill('SIGTERM');
    await exited;
    clearTimeout(timer);
  }
}

/** Resolves when `child` writes a stderr line containing `marker` (within `seconds`). */
function stderrLine(child: ChildProcess, marker: string, seconds: number): Promise<void> {
  return new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => reject(new Error(`no "${marker}" within ${seconds} s: ${text.slice(-500)}`)), seconds * 1000);
    child.stderr?.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      if (text.includes(marker)) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
}

export interface FaultPlatform {
  facadeUrl: string;
  rpcUrl: string;
  /** Admin RPC clients (admin service credential). */
  admin: PlatformClients;
  /** The test's own connection, for reading what the platform did. */
  database: Knex;
  postgres: HostedPostgres;
  temporal: Restartable;
  api: Restartable;
  worker: Restartable;
  sandbox: SandboxUpstream;
  receiver: MerchantReceiver;
  stop(): Promise<void>;
}

/** Starts every part; `env` adds to the roles' environment. */
export async function startFaultPlatform(env: Record<string, string> = {}): Promise<FaultPlatform> {
  const directory = mkdtempSync(path.join(tmpdir(), 'payments-faults-'));
  require('node:fs').chmodSync(directory, 0o755); // as root, PostgreSQL runs as the postgres user
  const postgres = await startHostedPostgres(path.join(directory, 'postgres'));
  const database = createDatabase(postgres.url, 4);
  await migrateToLatest(database);
  const temporalCli = ensureTemporalCli(() => undefined);
  if (!temporalCli) throw new Error('the Temporal CLI is required');
  const [temporalPort, uiPort, httpPort, rpcPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const temporal = new Restartable(
    'temporal',
    () => ({
      file: temporalCli,
      args: ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(temporalPort), '--ui-port', String(uiPort), '--db-filename', path.join(directory, 'temporal.sqlite'), '--log-level', 'error', ...DEV_SERVER_TUNING, ...devServerSearchAttributeArgs()],
    }),
    () => waitForPort('127.0.0.1', temporalPort, 60),
  );
  await temporal.start();
  const sandbox = await startSandboxUpstream({ api_key: FAULT_UPSTREAM.api_key, webhook_secret: FAULT_UPSTREAM.webhook_secret });
  const receiver = await startMerchantReceiver();
  const roleEnv: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: postgres.url,
    TEMPORAL_ADDRESS: `127.0.0.1:${temporalPort}`,
    TEMPORAL_TASK_QUEUE: 'faults',
    HTTP_PORT: String(httpPort),
    RPC_PORT: String(rpcPort),
    RPC_URL: '',
    PUBLIC_BASE_URL: `http://127.0.0.1:${httpPort}`,
    PLATFORM_KEY_DIR: path.join(directory, 'keys'),
    // The sandbox upstream over http on loopback: test mode, an explicit choice.
    PAYMENTS_MODE: 'test',
    UPSTREAM_PAYIN_URL: sandbox.payinUrl,
    UPSTREAM_API_KEY: FAULT_UPSTREAM.api_key,
    UPSTREAM_WEBHOOK_SECRET: FAULT_UPSTREAM.webhook_secret,
    UPSTREAM_TIMEOUT_SECONDS: '2',
    REQUEST_TIMEOUT_SECONDS: '5',
    WEBHOOK_RETRY_INITIAL_SECONDS: '0.5',
    WEBHOOK_RETRY_MAX_INTERVAL_SECONDS: '2',
    PAYIN_TTL_SECONDS: '900',
    PRE_TRANSFER_TTL_SECONDS: '900',
    OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'true',
    AUTH_FAILURES_PER_ADDRESS: '1000000',
    AUTH_FAILURES_PER_CREDENTIAL: '1000000',
    REQUESTS_PER_CALLER_PER_MINUTE: '0',
    RECONCILE_INTERVAL_SECONDS: '5',
    RECONCILE_GRACE_SECONDS: '10',
    SHUTDOWN_GRACE_SECONDS: '2',
    LOG_LEVEL: 'error',
    ...env,
  };
  const role = (name: string, roles: string) =>
    new Restartable(name, () => ({ file: process.execPath, args: ['--import', 'tsx', MAIN, 'serve', '--roles', roles], env: roleEnv }), (child) =>
      stderrLine(child, 'serving roles', 120),
    );
  const worker = role('worker', 'worker');
  const api = role('api', 'api,facade');
  await Promise.all([worker.start(), api.start()]);
  const { token } = await createServiceCredential(database, { name: 'fault suite', scopes: OPERATOR_SCOPES });
  const rpcUrl = `http://127.0.0.1:${rpcPort}`;
  const admin = createPlatformClients(rpcUrl, { credentials: { token } });
  return {
    facadeUrl: `http://127.0.0.1:${httpPort}`,
    rpcUrl,
    admin,
    database,
    postgres,
    temporal,
    api,
    worker,
    sandbox,
    receiver,
    async stop() {
      await api.stop().catch(() => undefined);
      await worker.stop().catch(() => undefined);
      await temporal.stop().catch(() => undefined);
      await receiver.close();
      await sandbox.close();
      await database.destroy();
      await postgres.stop();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

/** Runs `task` for every item with at most `limit` at once. */
export async function eachLimited<T, R>(items: T[], limit: number, task: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const index = next++;
        results[index] = await task(items[index]!, index);
      }
    }),
  );
  return results;
}

/** Polls `check` every 250 ms until it is truthy or `seconds` passed. @returns the seconds it took */
export async function converge(what: string, seconds: number, check: () => Promise<boolean>): Promise<number> {
  const started = Date.now();
  for (;;) {
    if (await check().catch(() => false)) return (Date.now() - started) / 1000;
    if (Date.now() - started > seconds * 1000) throw new Error(`${what}: not converged within ${seconds} s`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** Counts HTTP statuses (and network errors as "error") and keeps the slowest answer. */
export class Histogram {
  readonly counts = new Map<string, number>();
  /** Every answer that was not a 200, with its body: each must be a refusal the platform documents. */
  readonly refusals: Array<{ status: number | 'error'; json: Record<string, unknown> | undefined }> = [];
  slowestMs = 0;
  add(status: number | 'error', elapsedMs = 0, json?: Record<string, unknown>): void {
    this.counts.set(String(status), (this.counts.get(String(status)) ?? 0) + 1);
    this.slowestMs = Math.max(this.slowestMs, elapsedMs);
    if (status !== 200) this.refusals.push({ status, json });
  }
  toString(): string {
    return `${[...this.counts.entries()].sort().map(([status, count]) => `${status}×${count}`).join(' ')}  slowest ${(this.slowestMs / 1000).toFixed(1)} s`;
  }
}
