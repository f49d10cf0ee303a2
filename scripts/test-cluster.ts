/**
 * `npm run test:cluster`: the e2e suite (test/e2e) and the cluster fault test (test/cluster) against the production
 * topology of `payments cluster up` (docs/operations.md "Cluster topology"):
 *
 *   1. `npm run build` (the cluster's roles run the compiled dist/; CLUSTER_TEST_BUILD=0 skips it)
 *   2. a cluster of its own on free ports, on the platform PostgreSQL server (DATABASE_URL's server, else
 *      127.0.0.1:5432 as postgres) in databases of its own (payments_cluster_<pid>, temporal_cluster_<pid>,
 *      temporal_visibility_cluster_<pid>), with test settings and no respawn of a killed child;
 *      or, with PAYMENTS_TEST_CLUSTER=<cluster.json>, the cluster already up that the file describes (left up)
 *   3. jest on test/e2e and test/cluster with PAYMENTS_TEST_CLUSTER set (test/support/platform.ts)
 *   4. the demo (`npm run demo`, examples/demo.mjs) against the cluster's façade, RPC and sandbox, with the demo data
 *      the cluster seeded (CLUSTER_DEMO_DATA); skipped for a cluster given by PAYMENTS_TEST_CLUSTER, with CLUSTER_TEST_DEMO=0,
 *      and when test files are chosen on the command line unless CLUSTER_TEST_DEMO=1
 *   5. the cluster stopped with SIGTERM, its ports checked released, its databases and database roles dropped
 * Prints the time of each step.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, chmodSync, createWriteStream } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { CLUSTER_STATE_FILE, type ClusterState } from '../src/cli/cluster';
import { clusterRoleNames } from '../src/cli/cluster-database-roles';
import { freePort } from '../src/net';
import { temporalServerPorts } from '../src/temporal/server';

const ROOT = path.resolve(__dirname, '..');
const say = (line: string) => process.stderr.write(`${line}\n`);
const seconds = (since: number) => `${((Date.now() - since) / 1000).toFixed(1)} s`;

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A frontend port whose whole Temporal port block (frontend-300 … frontend+10) is free, below the 33061 limit. */
async function freeTemporalPort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt += 1) {
    const candidate = 20_000 + Math.floor(Math.random() * 13_000);
    const ports = Object.values(temporalServerPorts(candidate));
    if ((await Promise.all(ports.map(portFree))).every(Boolean)) return candidate;
  }
  throw new Error('no free block of ports for the Temporal server');
}

function listening(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url.includes('://') ? url : `tcp://${url}`);
  return new Promise((resolve) => {
    const socket = net.connect(Number(port), hostname, () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Drops the cluster's databases, then its database roles (which own nothing else once the databases are gone). */
async function dropDatabases(serverUrl: string, names: string[]): Promise<void> {
  const roles = Object.values(clusterRoleNames(names[0]!, { default: names[1]!, visibility: names[2]! }));
  const client = new pg.Client({ connectionString: `${serverUrl}/postgres` });
  await client.connect();
  try {
    for (const name of names) await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    for (const role of roles) await client.query(`DROP ROLE IF EXISTS ${role}`);
  } finally {
    await client.end();
  }
}

interface StartedCluster {
  stateFile: string;
  state: ClusterState;
  /** The sandbox upstream's port (the demo pays and closes payins through it). */
  sandboxPort: number;
  stop(): Promise<boolean>;
}

/**
 * Runs examples/demo.mjs against the cluster `state` describes (its façade, RPC, sandbox and credentials).
 * @returns the demo's exit status
 */
function runDemo(state: ClusterState, sandboxPort: number): number {
  const facade = new URL(state.facadeUrl);
  const rpc = new URL(state.rpcUrl);
  const demo = spawnSync(process.execPath, [path.join(ROOT, 'examples', 'demo.mjs')], {
    cwd: ROOT,
    stdio: 'inherit',
    env: {
      ...process.env,
      // The demo finds demo-credentials.json and admin-credentials.json in DATA_DIR: the cluster's directory.
      DATA_DIR: path.dirname(state.adminCredentialsFile),
      DEMO_CREDENTIALS: state.demoCredentialsFile,
      HTTP_PORT: facade.port,
      RPC_PORT: rpc.port,
      // The cluster's RPC speaks mTLS only: the operator's client certificate.
      RPC_URL: state.rpcUrl,
      RPC_CLIENT_TLS_CERT: state.rpcTls.cert,
      RPC_CLIENT_TLS_KEY: state.rpcTls.key,
      RPC_CLIENT_TLS_CA: state.rpcTls.ca,
      SANDBOX_PORT: String(sandboxPort),
      PAYIN_TTL_SECONDS: String(state.settings.PAYIN_TTL_SECONDS ?? ''),
      PRE_TRANSFER_TTL_SECONDS: String(state.settings.PRE_TRANSFER_TTL_SECONDS ?? ''),
    },
  });
  return demo.status ?? 1;
}

async function startCluster(): Promise<StartedCluster> {
  const directory = mkdtempSync(path.join(os.tmpdir(), 'payments-cluster-test-'));
  chmodSync(directory, 0o755);
  const base = (process.env.TEST_DATABASE_URL || process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres').replace(/\/[^/]*$/, '');
  const suffix = `cluster_${process.pid}`;
  const databases = [`payments_${suffix}`, `temporal_${suffix}`, `temporal_visibility_${suffix}`];
  const [httpPort, rpcPort, sandboxPort, uiPort, temporalPort] = [await freePort(), await freePort(), await freePort(), await freePort(), await freeTemporalPort()];
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: `${base}/${databases[0]}`,
    TEMPORAL_ADDRESS: '',
    TEMPORAL_DATABASE: databases[1],
    TEMPORAL_VISIBILITY_DATABASE: databases[2],
    TEMPORAL_FRONTEND_PORT: String(temporalPort),
    TEMPORAL_UI_PORT: String(uiPort),
    CLUSTER_DIR: path.join(directory, 'cluster'),
    CLUSTER_RESPAWN_SECONDS: '0',
    PLATFORM_KEY_DIR: path.join(directory, 'keys'),
    HTTP_PORT: String(httpPort),
    RPC_PORT: String(rpcPort),
    SANDBOX_PORT: String(sandboxPort),
    RPC_URL: '',
    PUBLIC_BASE_URL: `http://127.0.0.1:${httpPort}`,
    UPSTREAM_PAYIN_URL: '',
    // The settings of test/support/platform.ts testConfig, for the test files the cluster serves.
    OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'true',
    AUTH_FAILURES_PER_CREDENTIAL: '100000',
    AUTH_FAILURES_PER_CREDENTIAL_TOTAL: '100000',
    AUTH_FAILURES_PER_ADDRESS: '100000',
    RECONCILE_INTERVAL_SECONDS: '0',
    SHUTDOWN_GRACE_SECONDS: '2',
    // The demo's partner, merchant and users, for step 4.
    CLUSTER_DEMO_DATA: 'true',
    // What test/e2e/preorder-callback.test.ts asks for, so that the cluster serves it too.
    WEBHOOK_RETRY_INITIAL_SECONDS: '0.2',
    // Leaves room on a shared PostgreSQL (default max_connections 100) for the test process's own pools: the cluster
    // may then open 49 + 4 × (4 + 2) = 73 connections (its budget, src/cli/cluster.ts), the test process about 23.
    TEMPORAL_SQL_MAX_CONNS: '4',
    LOG_LEVEL: process.env.CLUSTER_TEST_LOG_LEVEL ?? 'warn',
  };
  const log = path.join(directory, 'cluster.log');
  const output = createWriteStream(log);
  const started = Date.now();
  const child: ChildProcess = spawn(process.execPath, [path.join(ROOT, 'bin', 'payments'), 'cluster', 'up'], { env, stdio: ['ignore', 'pipe', 'pipe'], cwd: ROOT });
  child.stdout?.pipe(output, { end: false });
  let text = '';
  const up = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the cluster was not up within 900 s; log ${log}`)), 900_000);
    let partial = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      output.write(chunk);
      const lines = (partial + chunk.toString()).split('\n');
      partial = lines.pop()!;
      for (const line of lines) process.stderr.write(`  cluster| ${line}\n`);
      text += chunk.toString();
      if (text.includes('Press Ctrl-C to stop.')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`payments cluster up exited (${code ?? signal}); log ${log}`));
    });
  });
  try {
    await up;
  } catch (error) {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    await dropDatabases(base, databases).catch(() => undefined);
    say(`cluster log and state kept in ${directory}`);
    throw error;
  }
  child.removeAllListeners('exit');
  say(`cluster up in ${seconds(started)} (wall clock, from the command)`);
  const stateFile = path.join(directory, 'cluster', CLUSTER_STATE_FILE);
  const state = JSON.parse(readFileSync(stateFile, 'utf8')) as ClusterState;
  return {
    stateFile,
    state,
    sandboxPort,
    async stop() {
      const stopping = Date.now();
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      child.kill('SIGTERM');
      const code = await Promise.race([exited, new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), 120_000))]);
      if (code === 'timeout') {
        say('the cluster did not stop within 120 s of SIGTERM: killing it');
        child.kill('SIGKILL');
      }
      output.end();
      const addresses = [state.facadeUrl, state.rpcUrl, state.temporalAddress, `127.0.0.1:${sandboxPort}`, ...(state.uiUrl ? [state.uiUrl] : [])];
      const open = (await Promise.all(addresses.map(async (address) => ((await listening(address)) ? address : undefined)))).filter(Boolean);
      say(`cluster stopped in ${seconds(stopping)} (exit ${String(code)})${open.length ? `; STILL LISTENING: ${open.join(', ')}` : '; every port released'}`);
      await dropDatabases(base, databases);
      const clean = code === 0 && open.length === 0;
      if (clean) rmSync(directory, { recursive: true, force: true });
      else say(`cluster log and state kept in ${directory}`);
      return clean;
    },
  };
}

async function main(): Promise<void> {
  const total = Date.now();
  if (process.env.CLUSTER_TEST_BUILD !== '0') {
    const building = Date.now();
    const build = spawnSync('npm', ['run', '-s', 'build'], { cwd: ROOT, stdio: 'inherit' });
    if (build.status !== 0) throw new Error('npm run build failed');
    say(`npm run build in ${seconds(building)}`);
  }
  const existing = process.env.PAYMENTS_TEST_CLUSTER;
  let cluster: StartedCluster | undefined;
  let stateFile: string;
  if (existing) {
    if (!existsSync(existing)) throw new Error(`PAYMENTS_TEST_CLUSTER: ${existing} does not exist (is the cluster up?)`);
    stateFile = path.resolve(existing);
    say(`using the cluster described by ${stateFile} (left up)`);
  } else {
    cluster = await startCluster();
    stateFile = cluster.stateFile;
  }
  let status = 1;
  const testing = Date.now();
  try {
    const jest = spawnSync(
      process.execPath,
      // Paths given on the command line (`npm run test:cluster -- test/e2e/partner-api`) replace the default ones.
      [path.join(ROOT, 'node_modules', 'jest', 'bin', 'jest.js'), '--runInBand', '--selectProjects', 'integration', 'cluster', '--', ...(process.argv.length > 2 ? process.argv.slice(2) : ['test/e2e/', 'test/cluster/'])],
      { cwd: ROOT, stdio: 'inherit', env: { ...process.env, PAYMENTS_TEST_CLUSTER: stateFile } },
    );
    status = jest.status ?? 1;
    say(`jest (test/e2e, test/cluster) against the cluster in ${seconds(testing)}: exit ${status}`);
    if (process.env.CLUSTER_TEST_DEMO === '0' || (process.argv.length > 2 && process.env.CLUSTER_TEST_DEMO !== '1')) {
      say('demo skipped (CLUSTER_TEST_DEMO=0, or a chosen set of test files without CLUSTER_TEST_DEMO=1)');
    } else if (!cluster?.state.demoCredentialsFile) {
      say('demo skipped: only a cluster this run started (with its demo data) is demoed against');
    } else {
      const demoing = Date.now();
      const demoStatus = runDemo(cluster.state, cluster.sandboxPort);
      say(`demo against the cluster in ${seconds(demoing)}: exit ${demoStatus}`);
      status = status || demoStatus;
    }
  } finally {
    if (cluster && !(await cluster.stop())) status = status || 1;
  }
  say(`test:cluster finished in ${seconds(total)}`);
  process.exit(status);
}

main().catch((error: unknown) => {
  say(error instanceof Error ? (error.stack ?? error.message) : String(error));
  process.exit(1);
});
