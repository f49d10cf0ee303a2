/**
 * The `payments` binary (platform decisions §1, §2):
 *   payments serve [--roles api,facade,worker]   run roles against configured PostgreSQL and Temporal
 *   payments dev                                 the dev stack (`npm start`)
 *   payments migrate                             apply database migrations
 *   payments admin ...                           onboarding and operations (src/cli/admin.ts)
 */
import { Command } from 'commander';
import { ConfigError, loadConfig, type Config } from '../config';
import { createLogger } from '../logger';
import { registerAdminCommands } from './admin';
import { registerWebhookCommands } from './admin-webhooks';
import { stopOnSignals } from './signals';

// The roles, the dev stack, the database and the sandbox are loaded only by the commands that run them, so
// `payments admin …` (a Connect client) starts without loading the Temporal worker, knex and every service.
const runtime = () => require('../runtime') as typeof import('../runtime');
const devStack = () => require('./dev') as typeof import('./dev');
const knex = () => require('../db/knex') as typeof import('../db/knex');
const sandbox = () => require('../sandbox/upstream') as typeof import('../sandbox/upstream');

const say = (line: string) => process.stderr.write(`${line}\n`);

function fail(error: unknown): never {
  say(error instanceof Error ? error.message : String(error));
  process.exit(1);
}

function config(): Config {
  try {
    return loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) fail(error);
    throw error;
  }
}

const program = new Command('payments').description('Payments platform: Areas A, B and C').showHelpAfterError();

program
  .command('serve')
  .description('run platform roles')
  .option('--roles <roles>', 'comma-separated roles: api, facade, worker', 'api,facade,worker')
  .action(async (options: { roles: string }) => {
    const settings = config();
    const roles = (() => {
      try {
        return runtime().parseRoles(options.roles);
      } catch (error) {
        fail(error);
      }
    })();
    const logger = createLogger(settings.LOG_LEVEL);
    const platform = await runtime().runRoles(settings, roles, logger).catch(fail);
    say(`serving roles ${roles.join(',')}${platform.facadeUrl ? ` façade ${platform.facadeUrl}` : ''}${platform.rpcUrl ? ` rpc ${platform.rpcUrl}` : ''}`);
    stopOnSignals(platform.stop, say);
  });

program
  .command('dev')
  .description('run the dev stack with embedded defaults (npm start)')
  .action(async () => {
    const settings = config();
    const logger = createLogger(settings.LOG_LEVEL);
    const stop = await devStack().runDevStack(settings, logger, say).catch(fail);
    stopOnSignals(stop, say);
  });

program
  .command('migrate')
  .description('apply database migrations (DATABASE_URL)')
  .action(async () => {
    const settings = config();
    if (!settings.DATABASE_URL) fail('DATABASE_URL is required');
    const { createDatabase, migrateToLatest } = knex();
    const database = createDatabase(settings.DATABASE_URL, 1);
    try {
      const applied = await migrateToLatest(database);
      say(applied.length ? `applied: ${applied.join(', ')}` : 'up to date');
    } finally {
      await database.destroy();
    }
  });

registerAdminCommands(program);
registerWebhookCommands(program);

program
  .command('sandbox-upstream')
  .description('run the sandbox upstream payin provider on SANDBOX_PORT (dev only, platform decisions §4)')
  .action(async () => {
    const settings = config();
    const { SANDBOX_DEFAULTS, startSandboxUpstream } = sandbox();
    const upstream = await startSandboxUpstream({
      port: settings.SANDBOX_PORT,
      api_key: settings.UPSTREAM_API_KEY ?? SANDBOX_DEFAULTS.api_key,
      webhook_secret: settings.UPSTREAM_WEBHOOK_SECRET ?? SANDBOX_DEFAULTS.webhook_secret,
    }).catch(fail);
    say(`sandbox upstream on ${upstream.url}: forward payins to ${upstream.payinUrl}`);
    stopOnSignals(() => upstream.close(), say);
  });

program.parseAsync(process.argv).catch(fail);
