/**
 * `payments cluster up` (`npm run cluster`): the production topology on one machine (docs/operations.md "Cluster
 * topology"):
 *
 *   PostgreSQL (DATABASE_URL, default postgres://postgres@127.0.0.1:5432/payments): the platform's database plus
 *     `temporal` and `temporal_visibility`, created when absent and migrated / schema-updated at every start; the
 *     api, worker and Temporal server processes each connect as a role of their own without superuser
 *     (cluster-database-roles.ts)
 *   a real Temporal server (src/temporal/server.ts) on TEMPORAL_FRONTEND_PORT, unless TEMPORAL_ADDRESS names one,
 *     with mTLS on its frontend and between its services: certificates made for the cluster (cluster-pki.ts), a
 *     client certificate for the api and worker roles, the UI and the operator
 *   the Temporal Web UI server, when its binary is present (src/temporal/server-binary.ts)
 *   N worker processes, N api processes sharing RPC_PORT and N façade processes sharing HTTP_PORT (Node's
 *     `cluster` module: this process holds each listening socket and hands connections to its children in turn)
 *   the sandbox upstream payin provider in test mode when no UPSTREAM_PAYIN_URL is set
 *
 * Every child runs `payments serve --roles <role>` from the compiled `dist/` when it exists (`npm run build`), else
 * the sources through tsx. A child that dies is started again after CLUSTER_RESPAWN_SECONDS (0: never). Ctrl-C /
 * SIGTERM stops the children (façades, then api, then workers, each draining), then the UI, the sandbox and the
 * Temporal server last. The running cluster is described in `<DATA_DIR>/cluster/cluster.json` (0600, no secret: the
 * paths of the files that hold them) while it is up. A façade gets no database URL, no key directory, no Temporal
 * settings and no upstream secret: only its RPC credential.
 */
import cluster, { type Worker as ClusterChild } from 'node:cluster';
import { chmodSync, createWriteStream, existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync, type WriteStream } from 'node:fs';
import path from 'node:path';
import type { Config } from '../config';
import { createDatabase, migrateToLatest, type Knex } from '../db/knex';
import { createLogger } from '../logger';
import { checkAborted, unlessAborted, waitForPort } from '../net';
import { checkDatabaseLogin } from '../db/login';
import { ensureDemoData } from '../onboarding/demo';
import { createPlatformDeps } from '../runtime';
import { SANDBOX_CREDENTIALS_FILE, startConfiguredSandbox } from '../sandbox/upstream';
import { createServiceCredential, OPERATOR_SCOPES } from '../service-credentials';
import { readCredentialsFile, writeCredentialsFile } from '../service-credentials/files';
import { ensureClusterPki, rpcClientSettings, rpcServerSettings, temporalClientOptions, temporalClientSettings, type ClusterPki } from '../temporal/cluster-pki';
import { ensureTemporalServer, ensureTemporalUiServer } from '../temporal/server-binary';
import {
  createDatabaseIfAbsent,
  DEFAULT_TEMPORAL_SQL_MAX_CONNS,
  ensureNamespace,
  postgresEndpoint,
  prepareTemporalDatabases,
  startTemporalServer,
  TEMPORAL_DATABASES,
  temporalServerConnectionsMax,
  type TemporalDatabases,
} from '../temporal/server';
import { ensurePaymentSearchAttributes } from '../temporal/search-attributes';
import { startTemporalUiServer } from '../temporal/ui-server';
import { devOutboundDefaults } from '../web/outbound';
import {
  clusterRoleNames,
  type ClusterRolePasswords,
  ensureRoles,
  grantPlatformDatabase,
  grantTemporalDatabase,
  mayCreateRoles,
  urlForRole,
  withoutPassword,
  type ClusterDatabaseRoles,
} from './cluster-database-roles';

export const DEFAULT_CLUSTER_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/payments';
export const CLUSTER_STATE_FILE = 'cluster.json';

export type ClusterRole = 'api' | 'facade' | 'worker';

export interface ClusterOptions {
  /** Processes per role. */
  workers: number;
  apis: number;
  facades: number;
  /** The Temporal frontend's gRPC port (the server's other ports follow it, src/temporal/server.ts). */
  temporalPort: number;
  /** Fixed at the server's first start on the `temporal` database (a later change is ignored, with a warning). */
  historyShards: number;
  /** The Web UI's port; 0: no UI. Served only when the UI server binary is present. */
  uiPort: number;
  /** Seconds before a dead child is started again; 0: never. */
  respawnSeconds: number;
  /** Where the server configuration, logs, credentials and cluster.json go. */
  directory: string;
  /** The Temporal server's two databases on the platform's PostgreSQL server. */
  temporalDatabases: TemporalDatabases;
  /** The Temporal server's pool on its default database. */
  temporalMaxConns: number;
  /**
   * Seed the demo partner, merchant and users (as `npm start` does) once every role serves, so that `npm run demo`
   * runs against the cluster; the roles may then reach private addresses (the demo merchant's local receiver).
   */
  demoData: boolean;
}

/** The options from the environment (each has a `payments cluster up` flag too). */
export function clusterOptionsFromEnvironment(config: Config, environment: NodeJS.ProcessEnv = process.env): ClusterOptions {
  const integer = (name: string, fallback: number) => {
    const text = environment[name];
    if (!text) return fallback;
    const value = Number(text);
    if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a non-negative integer (got "${text}")`);
    return value;
  };
  const temporalPort = integer('TEMPORAL_FRONTEND_PORT', 7233);
  // The server's other ports sit at -300 … +10 from the frontend's (src/temporal/server.ts), and Temporal's SQL
  // schema stores the membership ports (frontend-300 … -294) as a smallint: at most 32767.
  if (temporalPort < 1324 || temporalPort > 33_061) {
    throw new Error(`TEMPORAL_FRONTEND_PORT must be within 1324-33061 (its membership port, 300 below, is stored as a smallint) (got ${temporalPort})`);
  }
  return {
    workers: integer('CLUSTER_WORKERS', 2),
    apis: integer('CLUSTER_APIS', 2),
    facades: integer('CLUSTER_FACADES', 2),
    temporalPort,
    historyShards: integer('TEMPORAL_NUM_HISTORY_SHARDS', 4),
    uiPort: integer('TEMPORAL_UI_PORT', 8233),
    respawnSeconds: integer('CLUSTER_RESPAWN_SECONDS', 2),
    directory: path.resolve(environment.CLUSTER_DIR || path.join(config.DATA_DIR, 'cluster')),
    temporalDatabases: {
      default: environment.TEMPORAL_DATABASE || TEMPORAL_DATABASES.default,
      visibility: environment.TEMPORAL_VISIBILITY_DATABASE || TEMPORAL_DATABASES.visibility,
    },
    temporalMaxConns: Math.max(1, integer('TEMPORAL_SQL_MAX_CONNS', DEFAULT_TEMPORAL_SQL_MAX_CONNS)),
    demoData: environment.CLUSTER_DEMO_DATA === 'true' || environment.CLUSTER_DEMO_DATA === '1',
  };
}

/** What cluster.json says about a running cluster (tests and operators read it). */
export interface ClusterState {
  supervisorPid: number;
  facadeUrl: string;
  rpcUrl: string;
  temporalAddress: string;
  /** Started by this cluster (false: TEMPORAL_ADDRESS named an existing one). */
  temporalServerPid?: number;
  uiUrl?: string;
  /** The supervisor's database URL, without its password. */
  databaseUrl: string;
  /** The roles the api, worker and Temporal server processes connect as (absent: the supervisor's user for all). */
  databaseRoles?: ClusterDatabaseRoles;
  /** The Temporal server's databases, when this cluster runs it. */
  temporalDatabases?: TemporalDatabases;
  namespace: string;
  taskQueue: string;
  platformKeyDir: string;
  adminCredentialsFile: string;
  /** The demo's credentials (`DEMO_CREDENTIALS` of `npm run demo`), when the cluster seeded the demo data. */
  demoCredentialsFile?: string;
  /**
   * The operator's Temporal client certificate (PEM file paths; TEMPORAL_TLS_CA, TEMPORAL_TLS_CERT, TEMPORAL_TLS_KEY,
   * TEMPORAL_TLS_SERVER_NAME), when this cluster runs the Temporal server: every client needs one.
   */
  temporalTls?: { ca: string; cert: string; key: string; serverName: string };
  /**
   * The operator's client certificate of the internal RPC (PEM file paths; RPC_CLIENT_TLS_CA, RPC_CLIENT_TLS_CERT,
   * RPC_CLIENT_TLS_KEY): the RPC speaks mTLS only, so every caller needs one besides its service credential.
   */
  rpcTls: { ca: string; cert: string; key: string };
  respawnSeconds: number;
  /** The sandbox upstream (test mode): its payin URL, and the file (0600) holding its API key and notification secret. */
  upstream?: { payinUrl: string; credentialsFile: string };
  /** The roles' settings (src/config.ts), secrets left out. */
  settings: Record<string, unknown>;
  processes: Array<{ role: ClusterRole; index: number; pid: number; starts: number }>;
  /** Milliseconds from the command to every role serving. */
  startMilliseconds: number;
}

/** The command each child runs: compiled code when `npm run build` produced it, else the sources through tsx. */
export function childCommand(root = path.resolve(__dirname, '..', '..')): { exec: string; execArgv: string[]; compiled: boolean } {
  // `root` is the repository when running the sources, or dist/ when running compiled code.
  const compiledRoot = path.basename(root) === 'dist' ? root : path.join(root, 'dist');
  const sourceRoot = path.basename(root) === 'dist' ? path.dirname(root) : root;
  const compiled = path.join(compiledRoot, 'src', 'cli', 'main.js');
  if (existsSync(compiled)) return { exec: compiled, execArgv: [], compiled: true };
  return { exec: path.join(sourceRoot, 'src', 'cli', 'main.ts'), execArgv: ['--import', 'tsx'], compiled: false };
}

/** Whether a source file (src, workflows, rest-facade) is newer than the compiled entry point. */
function compiledIsStale(compiledEntry: string, sourceRoot: string): boolean {
  const built = statSync(compiledEntry).mtimeMs;
  const newer = (directory: string): boolean =>
    existsSync(directory) &&
    readdirSync(directory, { withFileTypes: true }).some((entry) =>
      entry.isDirectory() ? newer(path.join(directory, entry.name)) : entry.name.endsWith('.ts') && statSync(path.join(directory, entry.name)).mtimeMs > built,
    );
  return ['src', 'workflows', 'rest-facade'].some((directory) => newer(path.join(sourceRoot, directory)));
}

/** A credential kept in `file` across restarts while the database still knows it with `scopes`. @returns its token */
async function ensureCredential(database: Knex, file: string, name: string, scopes: readonly string[]): Promise<string> {
  const existing = readCredentialsFile(file);
  const live = existing && (await database('service_credentials').where({ id: existing.credential_id }).whereNull('revoked_at').whereRaw('scopes @> ?::text[]', [`{${scopes.join(',')}}`]).first('id'));
  if (existing && live) return existing.token;
  const created = await createServiceCredential(database, { name, scopes });
  writeCredentialsFile(file, { credential_id: created.id, token: created.token, scopes: created.scopes });
  return created.token;
}

/** The database named in `url` is created when absent (the Temporal schema tool's server gets the same treatment). */
async function ensurePlatformDatabase(url: string): Promise<void> {
  const name = decodeURIComponent(new URL(url).pathname.replace(/^\//, ''));
  if (name && name !== 'postgres') await createDatabaseIfAbsent(postgresEndpoint(url), name);
}

interface Child {
  role: ClusterRole;
  index: number;
  worker?: ClusterChild;
  starts: number;
  log: WriteStream;
}

const READY_MARKER = 'serving roles';
export const CHILD_DATABASE_POOL_MAX = 10;
const CHILD_START_SECONDS = 180;
const CHILD_STOP_SECONDS = 30;
/** What a child with a database holds besides its pool: the connection listening for announced auth changes. */
const CHILD_LISTENER_CONNECTIONS = 1;
/** What this process holds while the roles run: its pool of 2, and the demo seeding's pool of 2 and listener. */
const SUPERVISOR_CONNECTIONS_MAX = 5;

/** The most PostgreSQL connections a cluster opens, by whom (the Temporal server's only when this cluster runs it). */
export interface ConnectionBudget {
  roles: number;
  temporal: number;
  total: number;
}

export function clusterConnectionBudget(options: Pick<ClusterOptions, 'workers' | 'apis' | 'temporalMaxConns'>, runsTemporalServer: boolean): ConnectionBudget {
  // Façades hold no database connection; every api and worker process holds its pool and a listener.
  const roles = (options.workers + options.apis) * (CHILD_DATABASE_POOL_MAX + CHILD_LISTENER_CONNECTIONS) + SUPERVISOR_CONNECTIONS_MAX;
  const temporal = runsTemporalServer ? temporalServerConnectionsMax(options.temporalMaxConns) : 0;
  return { roles, temporal, total: roles + temporal };
}

/**
 * Refuses to start a cluster that could open more connections than its PostgreSQL server accepts from ordinary
 * users: under load the roles would then fail requests (SYSTEMERROR) and the Temporal server its persistence calls,
 * on "too many clients" instead of waiting for a pooled connection. Returns what the server accepts.
 * @throws Error naming both figures and the settings that lower the budget
 */
export async function checkConnectionBudget(database: Knex, budget: ConnectionBudget): Promise<number> {
  const { rows } = (await database.raw(
    "SELECT current_setting('max_connections')::int AS max, current_setting('superuser_reserved_connections')::int AS reserved",
  )) as { rows: Array<{ max: number; reserved: number }> };
  const { max, reserved } = rows[0]!;
  const accepted = max - reserved;
  if (budget.total > accepted) {
    throw new Error(
      `the cluster may open ${budget.total} PostgreSQL connections (api and worker processes ${budget.roles}, Temporal server ${budget.temporal}) but the server accepts ${accepted} (max_connections ${max} − superuser_reserved_connections ${reserved}): raise max_connections, or lower TEMPORAL_SQL_MAX_CONNS, CLUSTER_WORKERS or CLUSTER_APIS`,
    );
  }
  return accepted;
}

export interface RunningCluster {
  state: ClusterState;
  stop(): Promise<void>;
}

/**
 * Starts the cluster; resolves once every role serves. `abort` (a signal during start-up) stops it at its next step:
 * the children, the UI and the Temporal server started so far are stopped, then StartupAborted is thrown.
 * @throws ConfigError when DATABASE_URL names a user or password the server refuses
 */
export async function runCluster(initial: Config, options: ClusterOptions, say: (line: string) => void, abort?: AbortSignal): Promise<RunningCluster> {
  const started = Date.now();
  if (!cluster.isPrimary) throw new Error('payments cluster up must run as the primary process');
  const stops: Array<() => Promise<void>> = [];
  let stopping = false;
  const stop = async () => {
    stopping = true;
    for (const step of stops.reverse()) await step().catch((error) => say(`stop error: ${String(error)}`));
    stops.length = 0;
  };
  try {
    // Credentials, certificates and the state file live here: the supervisor's user only.
    mkdirSync(options.directory, { recursive: true, mode: 0o700 });
    chmodSync(options.directory, 0o700);
    const logDirectory = path.join(options.directory, 'logs');
    mkdirSync(logDirectory, { recursive: true });
    const databaseUrl = initial.DATABASE_URL ?? DEFAULT_CLUSTER_DATABASE_URL;
    const endpoint = postgresEndpoint(databaseUrl);
    const platformDatabase = decodeURIComponent(new URL(databaseUrl).pathname.replace(/^\//, ''));
    // The server's maintenance database: the platform's own is created next when absent.
    await checkDatabaseLogin(urlForDatabase(databaseUrl, 'postgres'));
    checkAborted(abort);
    await ensurePlatformDatabase(databaseUrl);
    const database = createDatabase(databaseUrl, 2);
    stops.push(() => database.destroy());
    const applied = await migrateToLatest(database);
    say(applied.length ? `migrations applied: ${applied.join(', ')}` : 'migrations: up to date');
    checkAborted(abort);
    const budget = clusterConnectionBudget(options, !initial.TEMPORAL_ADDRESS);
    const accepted = await checkConnectionBudget(database, budget);
    say(`PostgreSQL connections: at most ${budget.total} of the ${accepted} the server accepts (api and worker processes ${budget.roles}, Temporal server ${budget.temporal})`);
    // A role per process kind, none a superuser, granted after the migrations (new tables included).
    let roles: ClusterDatabaseRoles | undefined;
    let passwords: ClusterRolePasswords = {};
    if (platformDatabase === 'postgres') {
      // The maintenance database is everyone's: its CONNECT is not the cluster's to take from PUBLIC.
      say('warning: the platform runs in the maintenance database "postgres": no database roles of its own (give DATABASE_URL a database of its own)');
    } else if (await mayCreateRoles(database)) {
      roles = clusterRoleNames(platformDatabase, options.temporalDatabases);
      passwords = await ensureRoles(database, roles);
      await grantPlatformDatabase(database, platformDatabase, roles);
      say(`database roles: api ${roles.api}, worker ${roles.worker}${initial.TEMPORAL_ADDRESS ? '' : `, Temporal server ${roles.temporal}`} (no superuser; docs/security.md "Least privilege")`);
    } else {
      say(`warning: ${endpoint.user} may not create roles: the api, worker and Temporal server processes connect as ${endpoint.user} (docs/security.md "Least privilege")`);
    }

    checkAborted(abort);
    let temporalAddress = initial.TEMPORAL_ADDRESS;
    let temporalServerPid: number | undefined;
    let pki: ClusterPki | undefined;
    // The cluster's certificates: Temporal's (used when this cluster runs the server) and the internal RPC's mTLS.
    const rpcHostNames = isWildcardOrLoopback(initial.RPC_HOST) ? [] : [initial.RPC_HOST];
    const certificates = ensureClusterPki(path.join(options.directory, 'tls'), rpcHostNames);
    if (!temporalAddress) {
      const binaries = ensureTemporalServer(say);
      const preparing = Date.now();
      await prepareTemporalDatabases(binaries.sql, endpoint, say, options.temporalDatabases);
      if (roles) {
        for (const name of Object.values(options.temporalDatabases)) {
          const temporalDatabase = createDatabase(urlForDatabase(databaseUrl, name), 1);
          try {
            await grantTemporalDatabase(temporalDatabase, name, roles.temporal);
          } finally {
            await temporalDatabase.destroy();
          }
        }
      }
      say(`Temporal databases ${options.temporalDatabases.default}, ${options.temporalDatabases.visibility}: schema up to date (${((Date.now() - preparing) / 1000).toFixed(1)} s)`);
      // mTLS between every caller and the frontend, and between the server's own services.
      pki = certificates;
      const temporalStarted = Date.now();
      const server = await startTemporalServer({
        binaries,
        directory: path.join(options.directory, 'temporal'),
        endpoint: roles ? postgresEndpoint(urlForRole(databaseUrl, roles.temporal, passwords[roles.temporal])) : endpoint,
        frontendPort: options.temporalPort,
        historyShards: options.historyShards,
        databases: options.temporalDatabases,
        maxConns: options.temporalMaxConns,
        tls: { ca: pki.ca, cert: pki.server.cert, key: pki.server.key, serverName: pki.serverName, client: temporalClientOptions(pki, 'operator') },
        log: say,
        abort,
      });
      stops.push(() => server.stop());
      temporalAddress = server.address;
      temporalServerPid = server.pid;
      say(`Temporal server healthy in ${((Date.now() - temporalStarted) / 1000).toFixed(1)} s (config ${server.configFile}, log ${server.logFile})`);
      if (server.shardMismatch) {
        say(
          `warning: TEMPORAL_NUM_HISTORY_SHARDS=${server.shardMismatch.configured} ignored: ${options.temporalDatabases.default} was first started with ${server.shardMismatch.persisted} shards, which stay (a new count needs a new database)`,
        );
      }
      await ensureNamespace(temporalAddress, initial.TEMPORAL_NAMESPACE, 3, say, temporalClientOptions(pki, 'operator'));
      // The payment search attributes the workflows upsert (idempotent: registered once per database).
      await ensurePaymentSearchAttributes(temporalAddress, initial.TEMPORAL_NAMESPACE, say, temporalClientOptions(pki, 'operator'));
      say(`Temporal mTLS: certificates in ${pki.directory} (a client without one is refused)`);
      checkAborted(abort);
    } else {
      say(`using the Temporal cluster at TEMPORAL_ADDRESS=${temporalAddress} (no server started; its namespace and search attributes must exist)`);
    }

    let uiUrl: string | undefined;
    const uiBinary = options.uiPort && temporalServerPid ? uiServerOrNothing(say) : undefined;
    if (uiBinary && temporalServerPid) {
      const ui = await startTemporalUiServer({
        binary: uiBinary,
        directory: path.join(options.directory, 'ui'),
        temporalAddress,
        port: options.uiPort,
        tls: pki && { ca: pki.ca, cert: pki.clients.ui.cert, key: pki.clients.ui.key, serverName: pki.serverName },
        abort,
      });
      stops.push(() => ui.stop());
      uiUrl = ui.url;
    }

    // The operator's Temporal client settings, for this process's own clients (the demo seeding) and cluster.json.
    const operatorTls = pki ? temporalClientSettings(pki, 'operator') : {};
    let config: Config = { ...initial, DATABASE_URL: databaseUrl, TEMPORAL_ADDRESS: temporalAddress, ...operatorTls };
    let upstream: ClusterState['upstream'];
    // Test mode only; its secrets are made once per cluster directory (sandbox-upstream.json, 0600).
    const sandbox = await startConfiguredSandbox(config, options.directory);
    if (sandbox) {
      stops.push(() => sandbox.sandbox.close());
      config = sandbox.config;
      upstream = { payinUrl: config.UPSTREAM_PAYIN_URL!, credentialsFile: path.join(options.directory, SANDBOX_CREDENTIALS_FILE) };
      if (initial.UPSTREAM_API_KEY || initial.UPSTREAM_WEBHOOK_SECRET) {
        // Secrets from the environment: the file the tests and operators read holds them too, 0600.
        writeFileSync(upstream.credentialsFile, `${JSON.stringify({ api_key: config.UPSTREAM_API_KEY, webhook_secret: config.UPSTREAM_WEBHOOK_SECRET }, null, 2)}\n`, { mode: 0o600 });
      }
      say(`sandbox upstream payin server on ${sandbox.sandbox.url}`);
    }

    checkAborted(abort);
    // The façades reach the api processes over the shared RPC port with their own credential (scope facade).
    const facadeCredentials = path.join(options.directory, 'facade-credentials.json');
    await ensureCredential(database, facadeCredentials, 'cluster facade', ['facade']);
    const adminCredentialsFile = path.join(options.directory, 'admin-credentials.json');
    await ensureCredential(database, adminCredentialsFile, 'cluster admin', OPERATOR_SCOPES);

    // The internal RPC speaks mTLS only: a caller needs a certificate of the cluster's RPC CA (docs/security.md).
    const rpcUrl = `https://${hostForUrl(config.RPC_HOST)}:${config.RPC_PORT}`;
    const facadeUrl = `http://${hostForUrl(config.HTTP_HOST)}:${config.HTTP_PORT}`;
    const platformKeyDir = path.resolve(config.PLATFORM_KEY_DIR);
    const childEnvironment: NodeJS.ProcessEnv = {
      // Smaller pools than a lone process's 20 unless set: the default cluster then fits PostgreSQL's default 100.
      DATABASE_POOL_MAX: String(CHILD_DATABASE_POOL_MAX),
      ...process.env,
      // The mode chosen here (--demo-data is test mode; live otherwise unless PAYMENTS_MODE says so) for every child.
      PAYMENTS_MODE: config.PAYMENTS_MODE,
      DATABASE_URL: databaseUrl,
      TEMPORAL_ADDRESS: temporalAddress,
      PLATFORM_KEY_DIR: platformKeyDir,
      // The roles link timeline entries to this cluster's Web UI, unless the operator names another.
      ...(uiUrl && !initial.TEMPORAL_UI_URL ? { TEMPORAL_UI_URL: uiUrl } : {}),
      // The demo merchant's callback is a local receiver: the dev stack's outbound rule.
      ...(options.demoData ? { OUTBOUND_ALLOW_PRIVATE_NETWORKS: String(devOutboundDefaults(config).OUTBOUND_ALLOW_PRIVATE_NETWORKS) } : {}),
      ...(upstream
        ? { UPSTREAM_PAYIN_URL: upstream.payinUrl, UPSTREAM_API_KEY: config.UPSTREAM_API_KEY, UPSTREAM_WEBHOOK_SECRET: config.UPSTREAM_WEBHOOK_SECRET, ...(config.UPSTREAM_REFUND_URL ? { UPSTREAM_REFUND_URL: config.UPSTREAM_REFUND_URL } : {}) }
        : {}),
    };
    // Each role what it needs and no more: its own database role and Temporal client certificate (the worker the
    // provider's API key for refunds, not the notification secret: only the api role checks notifications); the façade only its RPC
    // credential (no database, keys, Temporal or upstream secret).
    const roleEnvironment: Record<ClusterRole, NodeJS.ProcessEnv> = {
      api: {
        ...childEnvironment,
        ...(roles ? { DATABASE_URL: urlForRole(databaseUrl, roles.api, passwords[roles.api]) } : {}),
        ...(pki ? temporalClientSettings(pki, 'api') : {}),
        ...rpcServerSettings(certificates),
      },
      worker: {
        ...childEnvironment,
        ...Object.fromEntries(WORKER_WITHHELD.map((name) => [name, ''])),
        ...(roles ? { DATABASE_URL: urlForRole(databaseUrl, roles.worker, passwords[roles.worker]) } : {}),
        ...(pki ? temporalClientSettings(pki, 'worker') : {}),
      },
      facade: {
        ...childEnvironment,
        ...Object.fromEntries(FACADE_WITHHELD.map((name) => [name, ''])),
        RPC_URL: `https://127.0.0.1:${config.RPC_PORT}`,
        ...rpcClientSettings(certificates, 'facade'),
        RPC_TOKEN_FILE: facadeCredentials,
        RPC_TOKEN: '',
      },
    };

    const command = childCommand();
    say(`roles run ${command.compiled ? 'compiled code from dist/' : 'the sources through tsx (no dist/: npm run build)'}`);
    if (command.compiled && compiledIsStale(command.exec, path.resolve(__dirname, '..', '..'))) {
      say('warning: dist/ is older than the sources: run npm run build (or remove dist/ to run the sources)');
    }
    cluster.setupPrimary({ exec: command.exec, execArgv: command.execArgv, silent: true });

    const children: Child[] = [];
    // Set once every role serves; the respawn handler rewrites cluster.json from it.
    const current: { state?: ClusterState } = {};
    const stateFile = path.join(options.directory, CLUSTER_STATE_FILE);
    const writeState = () => {
      const state = current.state;
      if (!state || stopping) return;
      const alive = (child: Child) => child.worker?.process.pid !== undefined && child.worker.process.exitCode === null && child.worker.process.signalCode === null;
      state.processes = children.filter(alive).map((child) => ({ role: child.role, index: child.index, pid: child.worker!.process.pid!, starts: child.starts }));
      writeFileSync(stateFile, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
      chmodSync(stateFile, 0o600);
    };

    const fork = (child: Child): Promise<void> => {
      cluster.setupPrimary({ exec: command.exec, execArgv: command.execArgv, args: ['serve', '--roles', child.role], silent: true });
      const worker = cluster.fork(roleEnvironment[child.role]);
      child.worker = worker;
      child.starts += 1;
      worker.process.stdout?.pipe(child.log, { end: false });
      const name = `${child.role}-${child.index}`;
      return new Promise<void>((resolve, reject) => {
        let text = '';
        const timer = setTimeout(() => reject(new Error(`${name} did not serve within ${CHILD_START_SECONDS} s: ${text.slice(-500)}`)), CHILD_START_SECONDS * 1000);
        let ready = false;
        worker.process.stderr?.on('data', (chunk: Buffer) => {
          child.log.write(chunk);
          if (ready) return;
          text += chunk.toString();
          if (text.includes(READY_MARKER)) {
            ready = true;
            clearTimeout(timer);
            resolve();
          }
        });
        worker.once('exit', (code, signal) => {
          clearTimeout(timer);
          if (!ready) reject(new Error(`${name} exited while starting (${code ?? signal}); log ${child.log.path as string}: ${text.slice(-500)}`));
          if (stopping || !ready) return;
          say(`${name} (pid ${worker.process.pid}) exited (${code ?? signal})${options.respawnSeconds ? `: starting it again in ${options.respawnSeconds} s` : ''}`);
          writeState();
          if (options.respawnSeconds) {
            setTimeout(() => {
              if (stopping) return;
              fork(child).then(
                () => {
                  say(`${name} serving again (pid ${child.worker?.process.pid})`);
                  writeState();
                },
                (error: unknown) => say(`${name} failed to start again: ${String(error)}`),
              );
            }, options.respawnSeconds * 1000).unref();
          }
        });
      });
    };

    const make = (role: ClusterRole, count: number) =>
      Array.from({ length: count }, (_, index): Child => {
        const child: Child = { role, index: index + 1, starts: 0, log: createWriteStream(path.join(logDirectory, `${role}-${index + 1}.log`), { flags: 'a' }) };
        children.push(child);
        return child;
      });
    const apis = make('api', options.apis);
    const workers = make('worker', options.workers);
    const facades = make('facade', options.facades);
    // Children stop before anything they use; façades first (they call the api), workers last (they drain).
    stops.push(async () => {
      for (const group of [facades, apis, workers]) await Promise.all(group.map((child) => stopClusterChild(child.worker)));
      for (const child of children) child.log.end();
      rmSync(stateFile, { force: true });
    });
    // One api process first: a first start creates the platform keys, which concurrent starts must not race for.
    const forking = Date.now();
    const [firstApi, ...otherApis] = apis;
    checkAborted(abort);
    // A signal while the children start: stop waiting for them, and stop them (they obey SIGTERM while starting).
    if (firstApi) await unlessAborted(fork(firstApi), abort);
    await unlessAborted(Promise.all([...otherApis, ...workers, ...facades].map((child) => fork(child))), abort);
    say(`${children.length} role processes serving in ${((Date.now() - forking) / 1000).toFixed(1)} s`);
    if (options.facades) await waitForPort(config.HTTP_HOST === '0.0.0.0' ? '127.0.0.1' : config.HTTP_HOST, config.HTTP_PORT, 30, abort);
    const demoCredentialsFile = options.demoData ? await unlessAborted(seedDemoData(config, { databaseUrl, temporalAddress, platformKeyDir, directory: options.directory }, say), abort) : undefined;
    checkAborted(abort);

    const state: ClusterState = {
      supervisorPid: process.pid,
      facadeUrl,
      rpcUrl,
      temporalAddress,
      temporalServerPid,
      uiUrl,
      databaseUrl: withoutPassword(databaseUrl),
      databaseRoles: roles,
      temporalDatabases: temporalServerPid ? options.temporalDatabases : undefined,
      namespace: config.TEMPORAL_NAMESPACE,
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      platformKeyDir,
      adminCredentialsFile,
      demoCredentialsFile,
      rpcTls: { ca: certificates.rpc.ca, cert: certificates.rpc.clients.operator.cert, key: certificates.rpc.clients.operator.key },
      temporalTls: pki && { ca: pki.ca, cert: pki.clients.operator.cert, key: pki.clients.operator.key, serverName: pki.serverName },
      respawnSeconds: options.respawnSeconds,
      upstream,
      settings: publicSettings(config),
      processes: [],
      startMilliseconds: Date.now() - started,
    };
    current.state = state;
    writeState();
    say('');
    say(`payments cluster is up in ${(state.startMilliseconds / 1000).toFixed(1)} s`);
    say(`  REST façade (Areas A, B, C)  ${facadeUrl}   ${options.facades} processes sharing the port; health: ${facadeUrl}/healthz`);
    say(`  Connect RPC                  ${rpcUrl}   ${options.apis} api processes sharing the port; mTLS, operator certificate ${certificates.rpc.clients.operator.cert}`);
    say(`  Temporal frontend            ${temporalAddress}   namespace ${config.TEMPORAL_NAMESPACE}, task queue ${config.TEMPORAL_TASK_QUEUE}, ${options.workers} worker processes${pki ? `; mTLS, operator certificate ${pki.clients.operator.cert}` : ''}`);
    say(uiUrl ? `  Temporal Web UI              ${uiUrl}` : '  Temporal Web UI              none (no UI server binary: see docs/operations.md "Cluster topology")');
    say(`  PostgreSQL                   ${databaseUrl.replace(/\/\/[^@]*@/, '//')} (Temporal: ${options.temporalDatabases.default}, ${options.temporalDatabases.visibility})`);
    say(`  admin credential             ${adminCredentialsFile}   (PAYMENTS_ADMIN_CREDENTIALS for payments admin …)`);
    if (demoCredentialsFile) say(`  demo credentials             ${demoCredentialsFile}   (npm run demo with DATA_DIR=${options.directory})`);
    say(`  state and logs               ${stateFile}   ${logDirectory}`);
    say('Press Ctrl-C to stop.');
    return { state, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * The demo records (src/onboarding/demo.ts, once per database) through the platform's own dependencies, built here for
 * the seeding only, after the roles created the platform keys. @returns the demo credentials file (in `directory`)
 */
async function seedDemoData(
  config: Config,
  where: { databaseUrl: string; temporalAddress: string; platformKeyDir: string; directory: string },
  say: (line: string) => void,
): Promise<string> {
  const stops: Array<() => Promise<void>> = [];
  try {
    const deps = await createPlatformDeps(
      { ...config, DATABASE_URL: where.databaseUrl, TEMPORAL_ADDRESS: where.temporalAddress, PLATFORM_KEY_DIR: where.platformKeyDir, DATABASE_POOL_MAX: 2 },
      createLogger(config.LOG_LEVEL, 'cluster'),
      stops,
    );
    const demo = await ensureDemoData(deps, where.directory);
    say(`demo data ${demo.created ? 'created' : 'present from an earlier start'}`);
    return demo.path;
  } finally {
    for (const step of stops.reverse()) await step();
  }
}

/** The settings without the secret ones (keys, tokens, passwords, secrets; a database URL loses its password). */
function publicSettings(config: Config): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(config)
      .filter(([name]) => !/SECRET|TOKEN|PASSWORD|API_KEY|_KEY$/.test(name))
      .map(([name, value]) => [name, name === 'DATABASE_URL' && typeof value === 'string' ? withoutPassword(value) : value]),
  );
}

/** What a façade process of the cluster is not given: it reaches everything through the api role's RPC. */
const FACADE_WITHHELD = [
  'DATABASE_URL',
  'PLATFORM_KEY_DIR',
  'TEMPORAL_ADDRESS',
  'TEMPORAL_TLS',
  'TEMPORAL_TLS_CA',
  'TEMPORAL_TLS_CERT',
  'TEMPORAL_TLS_KEY',
  'TEMPORAL_TLS_SERVER_NAME',
  'TEMPORAL_API_KEY',
  'UPSTREAM_PAYIN_URL',
  'UPSTREAM_API_KEY',
  'UPSTREAM_WEBHOOK_SECRET',
  'PAYMENTS_ADMIN_TOKEN',
  'PAYMENTS_ADMIN_CREDENTIALS',
] as const;

/**
 * What a worker process of the cluster is not given. It keeps UPSTREAM_API_KEY: its refund activities call the
 * provider with it; only the api role checks notifications, so only it holds the notification secret.
 */
const WORKER_WITHHELD = ['UPSTREAM_WEBHOOK_SECRET', 'PAYMENTS_ADMIN_TOKEN', 'PAYMENTS_ADMIN_CREDENTIALS'] as const;

/** `url` (a postgres:// URL) naming `database` instead of its own. */
function urlForDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${encodeURIComponent(database)}`;
  return parsed.toString();
}

/** The Web UI server, built once when absent (about a minute); a failed build leaves the cluster without UI. */
function uiServerOrNothing(say: (line: string) => void): string | undefined {
  try {
    return ensureTemporalUiServer(say);
  } catch (error) {
    say(`no Temporal Web UI: ${(error as Error).message}`);
    return undefined;
  }
}

function isWildcardOrLoopback(host: string): boolean {
  return ['0.0.0.0', '::', '127.0.0.1', 'localhost', '::1'].includes(host);
}

function hostForUrl(host: string): string {
  return host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
}

/** SIGTERM (the child drains, like Ctrl-C on `payments serve`), SIGKILL after CHILD_STOP_SECONDS. */
async function stopClusterChild(worker: ClusterChild | undefined): Promise<void> {
  const child = worker?.process;
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), CHILD_STOP_SECONDS * 1000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
