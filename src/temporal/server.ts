/**
 * A real Temporal server (frontend, history, matching and worker services in one process) on PostgreSQL, for
 * `payments cluster up` (src/cli/cluster.ts): its two databases (`temporal`, `temporal_visibility`) are created on
 * the platform's PostgreSQL server when absent and set up / updated with the SQL tool's embedded `postgresql/v12`
 * schemas; the server configuration is written under the cluster directory; the `default` namespace is registered
 * when absent.
 *
 * The history shard count is fixed when the server first starts on the `temporal` database: a server started later
 * with another count keeps the persisted one (it logs a warning, which startTemporalServer reports as
 * `shardMismatch`), so a changed `TEMPORAL_NUM_HISTORY_SHARDS` has no effect without a new database.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, openSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import pg from 'pg';
import { checkAborted, unlessAborted, waitForPort } from '../net';
import type { TemporalConnectionOptions } from './connection-options';
import { stopChild } from './dev-server';
import type { TemporalServerBinaries } from './server-binary';

const run = promisify(execFile);

export interface TemporalDatabases {
  default: string;
  visibility: string;
}

export const TEMPORAL_DATABASES: TemporalDatabases = { default: 'temporal', visibility: 'temporal_visibility' };

/** The ports of one server: the frontend's, the others at Temporal's usual offsets from it (7233 → 7234, 7235, 7239, 6933…). */
export function temporalServerPorts(frontend: number) {
  return {
    frontend,
    frontendHttp: frontend + 10,
    history: frontend + 1,
    matching: frontend + 2,
    worker: frontend + 6,
    frontendMembership: frontend - 300,
    historyMembership: frontend - 299,
    matchingMembership: frontend - 298,
    workerMembership: frontend - 294,
  };
}

export interface PostgresEndpoint {
  host: string;
  port: number;
  user: string;
  password: string;
}

/** Host, port, user and password of a `postgres://` URL (its database is ignored). */
export function postgresEndpoint(databaseUrl: string): PostgresEndpoint {
  const url = new URL(databaseUrl);
  return {
    host: url.hostname || '127.0.0.1',
    port: Number(url.port || 5432),
    user: decodeURIComponent(url.username || 'postgres'),
    password: decodeURIComponent(url.password),
  };
}

function serverUrl(endpoint: PostgresEndpoint, database: string): string {
  const auth = `${encodeURIComponent(endpoint.user)}${endpoint.password ? `:${encodeURIComponent(endpoint.password)}` : ''}`;
  return `postgres://${auth}@${endpoint.host}:${endpoint.port}/${database}`;
}

/** Creates `database` on the server when absent. @returns whether it was created */
export async function createDatabaseIfAbsent(endpoint: PostgresEndpoint, database: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: serverUrl(endpoint, 'postgres') });
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (found.rowCount) return false;
    await client.query(`CREATE DATABASE "${database.replace(/"/g, '""')}"`);
    return true;
  } finally {
    await client.end();
  }
}

/**
 * Creates both Temporal databases when absent, then `setup-schema -v 0.0` (versioning tables; a no-op when they
 * exist) and `update-schema` to the newest embedded `postgresql/v12` schema (a no-op when up to date).
 */
export async function prepareTemporalDatabases(
  sqlTool: string,
  endpoint: PostgresEndpoint,
  log: (line: string) => void,
  databases: TemporalDatabases = TEMPORAL_DATABASES,
): Promise<void> {
  for (const [kind, database] of Object.entries(databases)) {
    if (await createDatabaseIfAbsent(endpoint, database)) log(`created database ${database}`);
    const common = ['--plugin', 'postgres12', '--ep', endpoint.host, '-p', String(endpoint.port), '-u', endpoint.user, '--db', database];
    // The password goes through the environment (SQL_PASSWORD), not the command line.
    const env = { ...process.env, SQL_PASSWORD: endpoint.password };
    try {
      await run(sqlTool, [...common, 'setup-schema', '-v', '0.0'], { env });
      await run(sqlTool, [...common, 'update-schema', '--schema-name', `postgresql/v12/${kind === 'default' ? 'temporal' : 'visibility'}`], { env });
    } catch (error) {
      const failed = error as Error & { stderr?: string };
      throw new Error(`temporal-sql-tool on ${database}: ${failed.stderr?.trim().split('\n').slice(-3).join(' ') || failed.message}`);
    }
  }
}

const quote = (value: string) => JSON.stringify(value);

/**
 * Each Temporal service's pool on the `temporal` database by default (TEMPORAL_SQL_MAX_CONNS): with four services
 * that is at most 40 connections with visibility's, which leaves a default PostgreSQL (max_connections 100) room
 * for the platform's roles. Partner transfers through the cluster measured the same with pools of 3 and of 20.
 */
export const DEFAULT_TEMPORAL_SQL_MAX_CONNS = 8;

/** The services `payments cluster up` runs in its one Temporal server process (the `services:` of its config). */
export const TEMPORAL_SERVICES = ['frontend', 'history', 'matching', 'worker'] as const;

/** The visibility store's pool beside a `temporal` pool of `maxConns`: a fifth of it, at least 2. */
export function visibilityMaxConns(maxConns: number): number {
  return Math.max(2, Math.round(maxConns / 5));
}

/**
 * The most PostgreSQL connections the Temporal server may open with pools of `maxConns`: each of its services opens
 * its own pool on each store (measured: with maxConns 3 under load, 10 connections on `temporal` and 5 on
 * `temporal_visibility`; with 20, 44 and 7), so 4 × (maxConns + visibility's).
 */
export function temporalServerConnectionsMax(maxConns: number): number {
  return TEMPORAL_SERVICES.length * (maxConns + visibilityMaxConns(maxConns));
}

/**
 * mTLS of the server (PEM files): its certificate serves the frontend and the internode traffic (and is its client
 * certificate there), and every caller must present a certificate signed by `ca`.
 */
export interface TemporalServerTls {
  ca: string;
  cert: string;
  key: string;
  /** The name in the server certificate its own internal clients verify. */
  serverName: string;
}

/** The server configuration (YAML) for one process running every service, PostgreSQL persistence. */
export function temporalServerConfig(options: {
  endpoint: PostgresEndpoint;
  frontendPort: number;
  historyShards: number;
  dynamicConfigFile: string;
  logFile: string;
  databases?: TemporalDatabases;
  /** Each service's pool on the `temporal` database (visibility: visibilityMaxConns). */
  maxConns?: number;
  /** mTLS on the frontend and between the services; without it every port is plaintext (development only). */
  tls?: TemporalServerTls;
}): string {
  const databases = options.databases ?? TEMPORAL_DATABASES;
  const maxConns = options.maxConns ?? DEFAULT_TEMPORAL_SQL_MAX_CONNS;
  const ports = temporalServerPorts(options.frontendPort);
  const store = (database: string, maxConns: number) => `      sql:
        pluginName: "postgres12"
        databaseName: ${quote(database)}
        connectAddr: ${quote(`${options.endpoint.host}:${options.endpoint.port}`)}
        connectProtocol: "tcp"
        user: ${quote(options.endpoint.user)}
        password: ${quote(options.endpoint.password)}
        maxConns: ${maxConns}
        maxIdleConns: ${maxConns}
        maxConnLifetime: "1h"`;
  const service = (grpc: number, membership: number, http?: number) => `    rpc:
      grpcPort: ${grpc}
      membershipPort: ${membership}
      bindOnLocalHost: true${http ? `\n      httpPort: ${http}` : ''}`;
  const tls = options.tls;
  const tlsGroup = (name: string) =>
    tls
      ? `    ${name}:
      server:
        certFile: ${quote(tls.cert)}
        keyFile: ${quote(tls.key)}
        requireClientAuth: true
        clientCaFiles:
          - ${quote(tls.ca)}
      client:
        serverName: ${quote(tls.serverName)}
        rootCaFiles:
          - ${quote(tls.ca)}`
      : '';
  const tlsSection = tls
    ? `
  # mTLS: the frontend and every service port require a client certificate signed by the cluster's CA.
  tls:
${tlsGroup('internode')}
${tlsGroup('frontend')}`
    : '';
  return `# Written by \`payments cluster up\` at every start (src/temporal/server.ts); edit the settings, not this file.
log:
  stdout: false
  level: warn
  outputFile: ${quote(options.logFile)}

persistence:
  defaultStore: postgres-default
  visibilityStore: postgres-visibility
  # Fixed at the server's first start on this database: a different count later is ignored (the persisted one stays).
  numHistoryShards: ${options.historyShards}
  datastores:
    postgres-default:
${store(databases.default, maxConns)}
    postgres-visibility:
${store(databases.visibility, visibilityMaxConns(maxConns))}

global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: "127.0.0.1"${tlsSection}

services:
  frontend:
${service(ports.frontend, ports.frontendMembership, tls ? undefined : ports.frontendHttp)}
  history:
${service(ports.history, ports.historyMembership)}
  matching:
${service(ports.matching, ports.matchingMembership)}
  worker:
${service(ports.worker, ports.workerMembership)}

clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: "active"
  currentClusterName: "active"
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: "frontend"
      rpcAddress: ${quote(`127.0.0.1:${ports.frontend}`)}

dcRedirectionPolicy:
  policy: "noop"

archival:
  history:
    state: "disabled"
  visibility:
    state: "disabled"

namespaceDefaults:
  archival:
    history:
      state: "disabled"
    visibility:
      state: "disabled"

dynamicConfigClient:
  filepath: ${quote(options.dynamicConfigFile)}
  pollInterval: "10s"
`;
}

/** Dynamic configuration: the defaults suit the platform; the file exists so an operator can tune without a restart. */
const DYNAMIC_CONFIG = `# Temporal dynamic configuration, re-read every 10 s (keys: go.temporal.io/server common/dynamicconfig).
# Example: raise the frontend's per-namespace request rate.
# frontend.namespaceRPS:
#   - value: 2400
`;

/**
 * How long a stopping server gets after SIGTERM before SIGKILL. Its persistence is transactional and shard ownership
 * is fenced by range ids, so a hard stop is a crash it recovers from; a graceful stop can wait many seconds on
 * members of an earlier start still in its membership table, and the whole cluster must be gone within 10 s of one
 * SIGTERM (docs/operations.md "Graceful shutdown").
 */
const SERVER_STOP_GRACE_SECONDS = 5;

export interface RunningTemporalServer {
  address: string;
  pid: number;
  configFile: string;
  logFile: string;
  /** The persisted shard count when it differs from the configured one (which the server then ignored). */
  shardMismatch?: { configured: number; persisted: number };
  stop(): Promise<void>;
}

/** The server's warning that the configured shard count differs from the persisted one, in `text` (JSON log lines). */
export function findShardMismatch(text: string): { configured: number; persisted: number } | undefined {
  for (const line of text.split('\n')) {
    if (!line.includes('persistence.numHistoryShards')) continue;
    try {
      const entry = JSON.parse(line) as { 'ignored-value'?: number; value?: number };
      if (typeof entry['ignored-value'] === 'number' && typeof entry.value === 'number') return { configured: entry['ignored-value'], persisted: entry.value };
    } catch {
      // not a JSON line
    }
  }
  return undefined;
}

/** Polls the frontend's health check until it answers SERVING (the gRPC port opens before the services are ready). */
async function waitForFrontend(address: string, seconds: number, exited: Promise<never>, security: TemporalConnectionOptions, abort?: AbortSignal): Promise<void> {
  const deadline = Date.now() + seconds * 1000;
  let lastError: unknown;
  while (Date.now() < deadline) {
    checkAborted(abort);
    try {
      const connection = await Promise.race([Connection.connect({ address, connectTimeout: '2s', ...security }), exited]);
      try {
        const health = await connection.healthService.check({});
        await connection.workflowService.getSystemInfo({});
        if (health.status === 1) return;
      } finally {
        await connection.close();
      }
    } catch (error) {
      if ((error as Error).message.includes('exited early')) throw error;
      lastError = error;
    }
    await unlessAborted(new Promise((resolve) => setTimeout(resolve, 500)), abort);
  }
  throw new Error(`the Temporal frontend at ${address} was not healthy within ${seconds} s: ${String(lastError)}`);
}

/** Registers `namespace` when absent, then waits until the frontend serves it (namespace cache refresh). */
export async function ensureNamespace(
  address: string,
  namespace: string,
  retentionDays: number,
  log: (line: string) => void,
  security: TemporalConnectionOptions = {},
): Promise<void> {
  const connection = await Connection.connect({ address, ...security });
  try {
    try {
      await connection.workflowService.describeNamespace({ namespace });
    } catch {
      try {
        await connection.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs(retentionDays * 86_400_000) });
        log(`registered the Temporal namespace ${namespace} (retention ${retentionDays} days)`);
      } catch (error) {
        if (!/already exists/i.test((error as Error).message)) throw error;
      }
    }
    const deadline = Date.now() + 30_000;
    for (;;) {
      try {
        await connection.workflowService.listWorkflowExecutions({ namespace, pageSize: 1 });
        return;
      } catch (error) {
        if (Date.now() > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
  } finally {
    await connection.close();
  }
}

/**
 * Writes the configuration under `directory` and starts the server (own process group, so a terminal Ctrl-C reaches
 * only the supervisor, which stops it last). Resolves once the frontend is healthy.
 */
export async function startTemporalServer(options: {
  binaries: TemporalServerBinaries;
  directory: string;
  endpoint: PostgresEndpoint;
  frontendPort: number;
  historyShards: number;
  databases?: TemporalDatabases;
  maxConns?: number;
  /** mTLS (see temporalServerConfig); `client` is what this process presents to check the server's health. */
  tls?: TemporalServerTls & { client: TemporalConnectionOptions };
  log: (line: string) => void;
  /** Stops the server and rejects with StartupAborted when it fires before the frontend is healthy. */
  abort?: AbortSignal;
}): Promise<RunningTemporalServer> {
  const configDirectory = path.join(options.directory, 'config');
  mkdirSync(configDirectory, { recursive: true });
  const dynamicConfigFile = path.resolve(configDirectory, 'dynamicconfig.yaml');
  const logFile = path.resolve(options.directory, 'temporal-server.log');
  writeFileSync(dynamicConfigFile, DYNAMIC_CONFIG);
  const configFile = path.join(configDirectory, 'cluster.yaml');
  writeFileSync(
    configFile,
    temporalServerConfig({ ...options, dynamicConfigFile, logFile }),
    { mode: 0o600 },
  );
  const output = openSync(path.join(options.directory, 'temporal-server.out'), 'a');
  // The log is appended to across starts: only this start's lines count.
  const logOffset = existsSync(logFile) ? statSync(logFile).size : 0;
  const child = spawn(options.binaries.server, ['--config-file', path.resolve(configFile), '--allow-no-auth', 'start'], {
    stdio: ['ignore', output, output],
    detached: true,
  });
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code, signal) => reject(new Error(`the Temporal server exited early (${code ?? signal}); see ${logFile}`))),
  );
  exited.catch(() => undefined);
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const address = `127.0.0.1:${options.frontendPort}`;
  const stop = async () => {
    process.removeListener('exit', killOnExit);
    await stopChild(child, SERVER_STOP_GRACE_SECONDS);
  };
  try {
    await Promise.race([waitForPort('127.0.0.1', options.frontendPort, 90, options.abort), exited]);
    await waitForFrontend(address, 90, exited, options.tls?.client ?? {}, options.abort);
  } catch (error) {
    await stop();
    throw error;
  }
  const log = existsSync(logFile) ? readFileSync(logFile).subarray(logOffset).toString('utf8') : '';
  return { address, pid: child.pid!, configFile, logFile, shardMismatch: findShardMismatch(log), stop };
}
