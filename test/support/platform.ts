/**
 * A whole platform for one test file, against the run's real PostgreSQL and Temporal: its own database (cloned
 * from the migrated template), its own task queue and worker, an RPC server and the façade on free ports.
 *
 * Against a cluster (PAYMENTS_TEST_CLUSTER, `npm run test:cluster`), a test file that asks for every role and only
 * settings the cluster already has (clusterFits) gets the cluster itself instead: its façade and RPC URLs, its database and task
 * queue, with the dependencies (database, ledger, keys, Temporal client) built here against them and no role started
 * here. A file that needs its own settings or roles still runs them here, on the cluster's Temporal server and
 * PostgreSQL server.
 *
 *   const platform = await startTestPlatform();
 *   afterAll(() => platform.stop());   // also asserts the ledger invariants once the ledger exists
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { loadConfig, type Config } from '../../src/config';
import { createLogger } from '../../src/logger';
import type { PlatformDeps } from '../../src/platform-deps';
import { createPlatformClients, type PlatformClients, type RpcClientCredentials } from '../../src/rpc/clients';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import { createPlatformDeps, runRoles, type Role } from '../../src/runtime';
import { createServiceCredential, OPERATOR_SCOPES } from '../../src/service-credentials';
import { clusterRpcTls, clusterTemporalSettings, readClusterState, type ClusterState } from './cluster';

export interface TestPlatform {
  config: Config;
  deps: PlatformDeps;
  rpcUrl: string;
  facadeUrl: string;
  /** Clients over the network RPC port, presenting `adminToken`. */
  clients: PlatformClients;
  /**
   * The client certificate a network client of `rpcUrl` presents besides its credential: the cluster's operator
   * certificate (its RPC speaks mTLS only), else none. Pass it as `credentials.tls` to createPlatformClients.
   */
  rpcTls?: RpcClientCredentials['tls'];
  /** A service credential with every operator power (TEST_OPERATOR_SCOPES), as the operators' tests need. */
  adminToken: string;
  databaseName: string;
  stop(): Promise<void>;
}

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is unset: run tests through jest (global-setup)`);
  return value;
}

let bundleCode: string | undefined;

/** Creates a fresh database cloned from the migrated template; returns its name and URL. */
export async function createTestDatabase(): Promise<{ name: string; url: string; drop(): Promise<void> }> {
  const serverUrl = required('PAYMENTS_TEST_PG_SERVER_URL');
  const template = required('PAYMENTS_TEST_TEMPLATE_DATABASE');
  const name = `payments_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: `${serverUrl}/postgres` });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name} TEMPLATE ${template}`);
  } finally {
    await admin.end();
  }
  return {
    name,
    url: `${serverUrl}/${name}`,
    drop: async () => {
      const client = new pg.Client({ connectionString: `${serverUrl}/postgres` });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}

/** Configuration for a test platform: short durations, free ports, silent logs, overridable per test. */
export function testConfig(overrides: Record<string, string> = {}): Config {
  return loadConfig({
    TEMPORAL_ADDRESS: required('PAYMENTS_TEST_TEMPORAL_ADDRESS'),
    TEMPORAL_TASK_QUEUE: `test-${randomBytes(6).toString('hex')}`,
    HTTP_PORT: '0',
    RPC_PORT: '0',
    // Test mode is an explicit choice (the configuration's default is live): the sandbox acquirer and test cards.
    PAYMENTS_MODE: 'test',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    SHUTDOWN_GRACE_SECONDS: '2',
    // Each test file's task queue would get its own schedule; the reconciliation test runs it explicitly.
    RECONCILE_INTERVAL_SECONDS: '0',
    // Test receivers listen on 127.0.0.1; test/integration/outbound-guard.test.ts runs with the guard closed.
    OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'true',
    // Suites that send many bad credentials from 127.0.0.1 on purpose; test/e2e/abuse-limits.test.ts runs the defaults.
    AUTH_FAILURES_PER_CREDENTIAL: '100000',
    AUTH_FAILURES_PER_CREDENTIAL_TOTAL: '100000',
    AUTH_FAILURES_PER_ADDRESS: '100000',
    PLATFORM_KEY_DIR: process.env.PAYMENTS_TEST_KEY_DIR ?? '.data/test-keys',
    // Against a cluster (test:cluster), its Temporal frontend wants a client certificate.
    ...clusterTemporalSettings(),
    ...overrides,
  });
}

/**
 * The test operator's scopes: every operator power (admin, mint, credentials) and the ledger's writes, so a test
 * reaches any operator procedure with one credential. Tests of the split powers create narrower ones.
 */
export const TEST_OPERATOR_SCOPES = [...OPERATOR_SCOPES, 'ledger-write'];

/** How many test platforms of this file the cluster served (the rest ran their own roles). */
export const clusterServed = { count: 0 };

/**
 * Whether the cluster can stand for the platform a test file asks for: every role, no log capture, no reading of
 * in-process state, and every setting it asks for already the cluster's (scripts/test-cluster.ts starts the cluster with test settings).
 */
function clusterFits(
  cluster: ClusterState,
  options: { env?: Record<string, string>; roles?: Role[]; logDestination?: unknown; inProcess?: boolean; bundleCode?: string; spanExporter?: unknown },
): boolean {
  if ((options.roles ?? ['api', 'facade', 'worker']).length !== 3 || options.logDestination || options.inProcess || options.bundleCode || options.spanExporter) return false;
  const env = options.env ?? {};
  if (Object.keys(env).length === 0) return true;
  const wanted = testConfig(env) as unknown as Record<string, unknown>;
  return Object.keys(env).every((name) => name in cluster.settings && JSON.stringify(wanted[name]) === JSON.stringify(cluster.settings[name]));
}

/** The cluster as a test platform: nothing started here but the dependencies used to inspect and seed it. */
async function clusterPlatform(cluster: ClusterState): Promise<TestPlatform> {
  const facade = new URL(cluster.facadeUrl);
  const rpc = new URL(cluster.rpcUrl);
  const config = testConfig({
    DATABASE_URL: cluster.databaseUrl,
    TEMPORAL_ADDRESS: cluster.temporalAddress,
    TEMPORAL_NAMESPACE: cluster.namespace,
    TEMPORAL_TASK_QUEUE: cluster.taskQueue,
    PLATFORM_KEY_DIR: cluster.platformKeyDir,
    HTTP_PORT: facade.port,
    RPC_PORT: rpc.port,
    PUBLIC_BASE_URL: cluster.facadeUrl,
    ...(cluster.upstream ? { UPSTREAM_PAYIN_URL: cluster.upstream.payinUrl, UPSTREAM_API_KEY: cluster.upstream.apiKey, UPSTREAM_WEBHOOK_SECRET: cluster.upstream.webhookSecret } : {}),
  });
  const logger = createLogger(config.LOG_LEVEL, 'test');
  const stops: Array<() => Promise<void>> = [];
  const stopAll = async () => {
    for (const step of stops.reverse()) await step();
  };
  const deps = await createPlatformDeps(config, logger, stops).catch(async (error: unknown) => {
    await stopAll();
    throw error;
  });
  const adminToken = (await createServiceCredential(deps.database, { name: 'test admin', scopes: TEST_OPERATOR_SCOPES })).token;
  const rpcTls = clusterRpcTls();
  clusterServed.count += 1;
  const testPath = (expect.getState().testPath ?? '').replace(/^.*\/test\//, 'test/');
  process.stderr.write(`${testPath}: served by the cluster (façade ${cluster.facadeUrl})\n`);
  return {
    config,
    deps,
    rpcUrl: cluster.rpcUrl,
    facadeUrl: cluster.facadeUrl,
    clients: createPlatformClients(cluster.rpcUrl, { credentials: { token: adminToken, tls: rpcTls } }),
    rpcTls,
    adminToken,
    databaseName: new URL(cluster.databaseUrl).pathname.slice(1),
    async stop() {
      // The cluster's whole ledger balances after every test file.
      let check: Awaited<ReturnType<PlatformDeps['ledger']['check']>> | undefined;
      try {
        check = await deps.ledger.check();
      } finally {
        await stopAll();
      }
      if (!check.ok) throw new Error(`ledger invariants broken: ${check.imbalances.join('; ')}`);
    },
  };
}

export async function startTestPlatform(
  options: {
    env?: Record<string, string>;
    roles?: Role[];
    /** Receives every log line (JSON) instead of stdout. */
    logDestination?: { write(line: string): void };
    /** The worker's workflow code instead of the run's bundle (e.g. `bundleWorkflows({ traced: true })`). */
    bundleCode?: string;
    /** The file reads state kept inside the platform's process (the sandbox acquirer's record, its RPC metrics): never the cluster. */
    inProcess?: boolean;
    /** Trace every role into this exporter (src/tracing.ts): never the cluster. */
    spanExporter?: SpanExporter;
  } = {},
): Promise<TestPlatform> {
  const cluster = readClusterState();
  if (cluster && clusterFits(cluster, options)) return clusterPlatform(cluster);
  const database = await createTestDatabase();
  const config = testConfig({ DATABASE_URL: database.url, ...options.env });
  const logger = createLogger(config.LOG_LEVEL, 'test', options.logDestination);
  bundleCode ??= readFileSync(required('PAYMENTS_TEST_WORKFLOW_BUNDLE'), 'utf8');
  const running = await runRoles(config, options.roles ?? ['api', 'facade', 'worker'], logger, {
    bundle: { code: options.bundleCode ?? bundleCode },
    ...(options.spanExporter ? { spanExporter: options.spanExporter } : {}),
  });
  const rpcUrl = running.rpcUrl!;
  const adminToken = running.deps ? (await createServiceCredential(running.deps.database, { name: 'test admin', scopes: TEST_OPERATOR_SCOPES })).token : '';
  return {
    config,
    deps: running.deps!,
    rpcUrl,
    facadeUrl: running.facadeUrl!,
    clients: createPlatformClients(rpcUrl, { credentials: { token: adminToken } }),
    adminToken,
    databaseName: database.name,
    async stop() {
      // The ledger balances after every test file: check before stopping, fail the file when it does not.
      let check: Awaited<ReturnType<PlatformDeps['ledger']['check']>> | undefined;
      try {
        if (running.deps) check = await running.deps.ledger.check();
      } finally {
        await running.stop();
        await database.drop();
      }
      if (check && !check.ok) throw new Error(`ledger invariants broken: ${check.imbalances.join('; ')}`);
    },
  };
}
