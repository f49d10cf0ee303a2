/**
 * The `payments` binary (platform decisions §1, §2):
 *   payments --version                           the platform's version and the Node.js running it
 *   payments serve [--roles api,facade,worker]   run roles against configured PostgreSQL and Temporal
 *   payments dev                                 the dev stack (`npm start`)
 *   payments cluster up                          the production topology on one machine (`npm run cluster`)
 *   payments migrate                             apply database migrations
 *   payments credentials create --scope S …      a service credential straight in DATABASE_URL (offline): the first
 *                                                operator's (--scope admin --scope mint --scope credentials), or one
 *                                                bound to an existing partner or merchant (--scope partner:<id>)
 *   payments admin ...                           onboarding and operations (src/cli/admin.ts)
 */
import cluster from 'node:cluster';
import { Command } from 'commander';
import { ConfigError, loadConfig, type Config } from '../config';
import { createLogger } from '../logger';
import { registerAdminCommands } from './admin';
import { registerEventCommands } from './admin-events';
import { registerTimelineCommand } from './admin-timeline';
import { registerDepositRefundCommands } from './admin-deposit-refunds';
import { registerRefundCommands } from './admin-refunds';
import { registerPayoutCommands } from './admin-payouts';
import { registerPolicyCommands } from './admin-policies';
import { registerWebhookCommands } from './admin-webhooks';
import { parseRoles } from './roles';
import { obeySignals } from './signals';
import { versionLine } from './version';

// The roles, the dev stack, the database and the sandbox are loaded only by the commands that run them, so
// `payments admin …` (a Connect client) starts without loading the Temporal worker, knex and every service.
const runtime = () => require('../runtime') as typeof import('../runtime');
const devStack = () => require('./dev') as typeof import('./dev');
const clusterStack = () => require('./cluster') as typeof import('./cluster');
const knex = () => require('../db/knex') as typeof import('../db/knex');
const sandbox = () => require('../sandbox/upstream') as typeof import('../sandbox/upstream');

const say = (line: string) => process.stderr.write(`${line}\n`);

function fail(error: unknown): never {
  say(error instanceof Error ? error.message : String(error));
  process.exit(1);
}

/** The configuration; `defaults` stand in for unset variables (the dev stack's test mode). Exits on a bad value. */
function config(defaults: Record<string, string> = {}): Config {
  try {
    return loadConfig(process.env, defaults);
  } catch (error) {
    if (error instanceof ConfigError) fail(error);
    throw error;
  }
}

/** The roles of `--roles`, else PAYMENTS_ROLES. Exits on an unknown one. */
function chosenRoles(flag: string | undefined, settings: Config): ReturnType<typeof parseRoles> {
  try {
    return parseRoles(flag ?? settings.PAYMENTS_ROLES);
  } catch (error) {
    fail(error);
  }
}

/** Test mode, the explicit choice of the development commands (`npm start`, the sandbox, a cluster with demo data). */
const TEST_MODE = { PAYMENTS_MODE: 'test' };

const program = new Command('payments')
  .description('Payments platform: Areas A, B and C')
  .version(versionLine(), '-V, --version', 'print the version of the platform and of Node.js')
  .showHelpAfterError();

program
  .command('serve')
  .description('run platform roles')
  .option('--roles <roles>', 'comma-separated roles: api, facade, worker (default: PAYMENTS_ROLES, else all three)')
  .action(async (options: { roles?: string }) => {
    // Obeyed before anything starts. A child of `payments cluster up` is stopped by its supervisor (SIGTERM), in
    // order, not by a terminal's Ctrl-C.
    const lifecycle = obeySignals(say, cluster.isWorker ? ['SIGTERM'] : undefined);
    const settings = config();
    const roles = chosenRoles(options.roles, settings);
    const logger = createLogger(settings.LOG_LEVEL);
    const platform = await runtime().runRoles(settings, roles, logger, { abort: lifecycle.abort }).catch(lifecycle.failed);
    say(`serving roles ${roles.join(',')}${platform.facadeUrl ? ` façade ${platform.facadeUrl}` : ''}${platform.rpcUrl ? ` rpc ${platform.rpcUrl}` : ''}`);
    lifecycle.started(platform.stop);
  });

program
  .command('health')
  .description('probe the roles this host runs: façade /healthz, api HealthService, worker polls seen by Temporal (the container healthcheck)')
  .option('--roles <roles>', 'comma-separated roles to probe (default: PAYMENTS_ROLES, else all three)')
  .option('--poll-seconds <s>', 'how recent a worker poll must be, seconds (default 90: longer than a long poll)')
  .action(async (options: { roles?: string; pollSeconds?: string }) => {
    const settings = config();
    const roles = chosenRoles(options.roles, settings);
    const pollSeconds = options.pollSeconds === undefined ? undefined : Number(options.pollSeconds);
    if (pollSeconds !== undefined && (!Number.isInteger(pollSeconds) || pollSeconds < 1)) fail(`--poll-seconds must be a positive integer (got "${options.pollSeconds}")`);
    const { checkHealth } = require('./health') as typeof import('./health');
    const report = await checkHealth(settings, roles, { pollSeconds }).catch(fail);
    for (const line of report.lines) process.stdout.write(`${line}\n`);
    process.exit(report.ok ? 0 : 1);
  });

program
  .command('dev')
  .description('run the dev stack with embedded defaults, in test mode unless PAYMENTS_MODE says otherwise (npm start)')
  .action(async () => {
    const lifecycle = obeySignals(say);
    const settings = config(TEST_MODE);
    const logger = createLogger(settings.LOG_LEVEL);
    const stop = await devStack().runDevStack(settings, logger, say, lifecycle.abort).catch(lifecycle.failed);
    lifecycle.started(stop);
  });

const clusterCommand = program.command('cluster').description('the production topology on one machine');
clusterCommand
  .command('up')
  .description('a real Temporal server on PostgreSQL, then worker, api and façade processes (npm run cluster)')
  .option('--workers <n>', 'worker processes (CLUSTER_WORKERS, default 2)')
  .option('--apis <n>', 'api processes sharing RPC_PORT (CLUSTER_APIS, default 2)')
  .option('--facades <n>', 'façade processes sharing HTTP_PORT (CLUSTER_FACADES, default 2)')
  .option('--temporal-port <port>', 'Temporal frontend gRPC port (TEMPORAL_FRONTEND_PORT, default 7233)')
  .option('--ui-port <port>', 'Temporal Web UI port, 0 for none (TEMPORAL_UI_PORT, default 8233)')
  .option('--respawn-seconds <s>', 'restart a dead child after this many seconds, 0 never (CLUSTER_RESPAWN_SECONDS, default 2)')
  .option('--demo-data', 'test mode, with the demo partner, merchant and users for npm run demo (CLUSTER_DEMO_DATA=true)')
  .action(async (flags: { workers?: string; apis?: string; facades?: string; temporalPort?: string; uiPort?: string; respawnSeconds?: string; demoData?: boolean }) => {
    const lifecycle = obeySignals(say);
    const demoData = Boolean(flags.demoData) || process.env.CLUSTER_DEMO_DATA === 'true' || process.env.CLUSTER_DEMO_DATA === '1';
    // Demo data is test mode: the demo partner's float and credentials on disk have no place in a live deployment.
    const settings = config(demoData ? TEST_MODE : {});
    if (demoData && settings.PAYMENTS_MODE === 'live') fail('invalid configuration: PAYMENTS_MODE: --demo-data (CLUSTER_DEMO_DATA) is test mode; unset PAYMENTS_MODE or set it to test');
    const stack = clusterStack();
    const options = (() => {
      try {
        return stack.clusterOptionsFromEnvironment(settings, {
          ...process.env,
          ...(flags.workers ? { CLUSTER_WORKERS: flags.workers } : {}),
          ...(flags.apis ? { CLUSTER_APIS: flags.apis } : {}),
          ...(flags.facades ? { CLUSTER_FACADES: flags.facades } : {}),
          ...(flags.temporalPort ? { TEMPORAL_FRONTEND_PORT: flags.temporalPort } : {}),
          ...(flags.uiPort ? { TEMPORAL_UI_PORT: flags.uiPort } : {}),
          ...(flags.respawnSeconds ? { CLUSTER_RESPAWN_SECONDS: flags.respawnSeconds } : {}),
          ...(flags.demoData ? { CLUSTER_DEMO_DATA: 'true' } : {}),
        });
      } catch (error) {
        fail(error);
      }
    })();
    const running = await stack.runCluster(settings, options, say, lifecycle.abort).catch(lifecycle.failed);
    lifecycle.started(running.stop);
  });
clusterCommand
  .command('certificates')
  .description("the Temporal mTLS certificates of a cluster: a CA, the server's and each client's (docker-compose runs this)")
  .requiredOption('--directory <dir>', 'where the CA and every certificate are kept (the CA key stays here, 0600)')
  .option('--host <name...>', 'DNS names or addresses the server certificate carries besides localhost and 127.0.0.1')
  .option('--export <dir>', 'also copy, per party, its CA certificate, certificate and key to <dir>/<party>/{ca,cert,key}.pem')
  .action((options: { directory: string; host?: string[]; export?: string }) => {
    const { ensureClusterPki, exportClusterPki } = require('../temporal/cluster-pki') as typeof import('../temporal/cluster-pki');
    try {
      const pki = ensureClusterPki(options.directory, options.host ?? []);
      if (options.export) exportClusterPki(pki, options.export);
      say(`Temporal certificates in ${pki.directory}${options.export ? `, copied per party to ${options.export}` : ''}`);
    } catch (error) {
      fail(error);
    }
  });

program
  .command('migrate')
  .description('apply database migrations (DATABASE_URL), then grant the api and worker roles their tables')
  .option('--api-role <role>', 'database role of the api processes: SELECT, INSERT, UPDATE, DELETE on the platform tables, no DDL')
  .option('--worker-role <role>', 'database role of the worker processes: the same without the service credentials')
  .action(async (options: { apiRole?: string; workerRole?: string }) => {
    const settings = config();
    if (!settings.DATABASE_URL) fail('DATABASE_URL is required');
    if (Boolean(options.apiRole) !== Boolean(options.workerRole)) fail('--api-role and --worker-role go together');
    const { checkDatabaseLogin } = require('../db/login') as typeof import('../db/login');
    await checkDatabaseLogin(settings.DATABASE_URL).catch(fail);
    const { createDatabase, migrateToLatest } = knex();
    const database = createDatabase(settings.DATABASE_URL, 1);
    try {
      const applied = await migrateToLatest(database);
      say(applied.length ? `applied: ${applied.join(', ')}` : 'up to date');
      if (options.apiRole && options.workerRole) {
        // As the tables' owner, after every migration: new tables are covered (docs/security.md "Least privilege").
        const { grantPlatformDatabase } = require('./cluster-database-roles') as typeof import('./cluster-database-roles');
        const name = decodeURIComponent(new URL(settings.DATABASE_URL).pathname.replace(/^\//, ''));
        await grantPlatformDatabase(database, name, { api: options.apiRole, worker: options.workerRole, temporal: '' });
        say(`granted: ${options.apiRole} (api), ${options.workerRole} (worker)`);
      }
    } catch (error) {
      fail(error);
    } finally {
      await database.destroy();
    }
  });

program
  .command('credentials')
  .description('service credentials written straight to the database (DATABASE_URL), e.g. the first admin one')
  .command('create')
  .description('create a service credential; prints its token once')
  .requiredOption(
    '--scope <scope...>',
    'admin (operators), mint (CreditWallet), credentials (credentials, key rotation), ledger-write (LedgerService writes), facade (the REST façade), partner:<id> or merchant:<id> (acts for that owner only)',
  )
  .option('--name <name>', 'who holds it', 'bootstrap admin')
  .option('--json', 'print one JSON object')
  .option('--file <file>', 'write it to this credentials file (0600) instead of printing; do nothing when the file already holds one')
  .action(async (options: { scope: string[]; name: string; json?: boolean; file?: string }) => {
    const settings = config();
    const files = require('../service-credentials/files') as typeof import('../service-credentials/files');
    if (options.file && files.readCredentialsFile(options.file)) {
      say(`${options.file} already holds a credential: nothing created`);
      return;
    }
    if (!settings.DATABASE_URL) fail('DATABASE_URL is required');
    const { createDatabase } = knex();
    const credentials = require('../service-credentials') as typeof import('../service-credentials');
    const database = createDatabase(settings.DATABASE_URL, 1);
    try {
      const created = await credentials.createServiceCredential(database, { name: options.name, scopes: options.scope });
      const result = { credential_id: created.id, token: created.token, scopes: created.scopes };
      if (options.file) {
        files.writeCredentialsFile(options.file, result);
        say(`credential ${created.id} written to ${options.file}`);
        return;
      }
      process.stdout.write(options.json ? `${JSON.stringify(result)}\n` : Object.entries(result).map(([key, value]) => `${key}: ${String(value)}\n`).join(''));
    } catch (error) {
      fail(error);
    } finally {
      await database.destroy();
    }
  });

registerAdminCommands(program);
registerWebhookCommands(program);
registerEventCommands(program);
registerTimelineCommand(program);
registerRefundCommands(program);
registerDepositRefundCommands(program);
registerPolicyCommands(program);
registerPayoutCommands(program);

program
  .command('sandbox-upstream')
  .description('run the sandbox upstream payin provider on SANDBOX_PORT (test mode only, platform decisions §4)')
  .action(async () => {
    const lifecycle = obeySignals(say);
    const settings = config(TEST_MODE);
    if (settings.PAYMENTS_MODE === 'live') fail('invalid configuration: PAYMENTS_MODE: the sandbox upstream is test mode only');
    const { sandboxCredentials, startSandboxUpstream } = sandbox();
    // Unless both are set, the secrets of DATA_DIR (made once, 0600): the platform of the same DATA_DIR uses them too.
    const generated = settings.UPSTREAM_API_KEY && settings.UPSTREAM_WEBHOOK_SECRET ? undefined : sandboxCredentials(settings.DATA_DIR);
    const upstream = await startSandboxUpstream({
      host: settings.SANDBOX_HOST,
      port: settings.SANDBOX_PORT,
      api_key: settings.UPSTREAM_API_KEY ?? generated!.api_key,
      webhook_secret: settings.UPSTREAM_WEBHOOK_SECRET ?? generated!.webhook_secret,
    }).catch(lifecycle.failed);
    say(`sandbox upstream on ${upstream.url}: forward payins to ${upstream.payinUrl}`);
    lifecycle.started(() => upstream.close());
  });

program.parseAsync(process.argv).catch(fail);
