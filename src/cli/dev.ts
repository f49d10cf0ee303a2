/**
 * `npm start` (= `payments dev`): the dev stack with embedded defaults for whatever is not configured
 * (platform decisions §1): embedded PostgreSQL under `.data/postgres` unless `DATABASE_URL`, the Temporal dev
 * server (SQLite under `.data/temporal`, Web UI on 8233) unless `TEMPORAL_ADDRESS`, migrations, then every role.
 */
import path from 'node:path';
import type { Config } from '../config';
import { createDatabase, migrateToLatest, type Knex } from '../db/knex';
import { checkDatabaseLogin } from '../db/login';
import { startEmbeddedPostgres } from '../db/embedded';
import type { Logger } from '../logger';
import { checkAborted } from '../net';
import { runRoles } from '../runtime';
import { ensureDemoData } from '../onboarding/demo';
import { createServiceCredential, OPERATOR_SCOPES } from '../service-credentials';
import { ADMIN_CREDENTIALS_FILE, readCredentialsFile, writeCredentialsFile } from '../service-credentials/files';
import { startConfiguredSandbox } from '../sandbox/upstream';
import { startTemporalDevServer } from '../temporal/dev-server';
import { devOutboundDefaults } from '../web/outbound';

/**
 * The dev stack's operator service credential (every operator power: admin, mint, credentials), in
 * `<DATA_DIR>/admin-credentials.json` (0600), where `payments admin …`
 * run from the project directory and the demo find it. Kept across restarts while the database still knows it.
 * @returns the file's path
 */
async function ensureDevAdminCredential(database: Knex, dataDirectory: string): Promise<string> {
  const file = path.join(dataDirectory, ADMIN_CREDENTIALS_FILE);
  const existing = readCredentialsFile(file);
  // One with every operator power (a file from before the powers were split is replaced).
  const live = existing && (await database('service_credentials').where({ id: existing.credential_id }).whereNull('revoked_at').whereRaw('scopes @> ?::text[]', [`{${OPERATOR_SCOPES.join(',')}}`]).first('id'));
  if (live) return file;
  const created = await createServiceCredential(database, { name: 'dev stack admin', scopes: OPERATOR_SCOPES });
  writeCredentialsFile(file, { credential_id: created.id, token: created.token, scopes: created.scopes });
  return file;
}

/**
 * Starts the dev stack; resolves to its stop (roles first, embedded PostgreSQL last). `abort` (a signal during
 * start-up) stops it at its next step: what started is stopped, then StartupAborted is thrown.
 * @throws ConfigError when DATABASE_URL names a user, password or database the server refuses
 */
export async function runDevStack(initial: Config, logger: Logger, say: (line: string) => void, abort?: AbortSignal): Promise<() => Promise<void>> {
  const stops: Array<() => Promise<void>> = [];
  const stop = async () => {
    for (const step of stops.reverse()) await step().catch((error) => say(`stop error: ${String(error)}`));
    stops.length = 0;
  };
  try {
    let config: Config = devOutboundDefaults(initial);
    if (!config.DATABASE_URL) {
      say(`starting embedded PostgreSQL (data under ${path.join(config.DATA_DIR, 'postgres')})`);
      // Not interrupted (initdb and pg_ctl start take seconds): stopped right after if a signal came meanwhile.
      const embedded = await startEmbeddedPostgres({ directory: path.join(config.DATA_DIR, 'postgres') });
      stops.push(() => embedded.stop());
      config = { ...config, DATABASE_URL: embedded.url };
    } else {
      await checkDatabaseLogin(config.DATABASE_URL);
    }
    checkAborted(abort);
    let temporalUi: string | undefined;
    if (!config.TEMPORAL_ADDRESS) {
      say(`starting the Temporal dev server on 127.0.0.1:${config.TEMPORAL_FRONTEND_PORT} (state in ${path.join(config.DATA_DIR, 'temporal', 'temporal.sqlite')})`);
      const temporal = await startTemporalDevServer({
        dataDirectory: path.join(config.DATA_DIR, 'temporal'),
        namespace: config.TEMPORAL_NAMESPACE,
        port: config.TEMPORAL_FRONTEND_PORT,
        uiPort: config.TEMPORAL_UI_PORT,
        log: say,
        abort,
      });
      stops.push(() => temporal.stop());
      // The timeline links to this dev server's Web UI unless TEMPORAL_UI_URL names another.
      config = { ...config, TEMPORAL_ADDRESS: temporal.address, TEMPORAL_UI_URL: config.TEMPORAL_UI_URL ?? temporal.uiUrl };
      temporalUi = temporal.uiUrl;
    }
    checkAborted(abort);
    say('migrating the database');
    const database = createDatabase(config.DATABASE_URL!, 2);
    const applied = await migrateToLatest(database).finally(() => database.destroy());
    say(applied.length ? `migrations applied: ${applied.join(', ')}` : 'migrations: up to date');
    checkAborted(abort);
    // The sandbox upstream exists only in test mode.
    const started = await startConfiguredSandbox(config);
    if (started) {
      stops.push(() => started.sandbox.close());
      config = started.config;
      say(`sandbox upstream payin server on ${started.sandbox.url} (POST /sandbox/payins/{invoice_reference}/pay | /close)`);
    }
    checkAborted(abort);
    const platform = await runRoles(config, ['api', 'facade', 'worker'], logger, { abort });
    stops.push(() => platform.stop());
    checkAborted(abort);
    const demo = await ensureDemoData(platform.deps!, config.DATA_DIR);
    checkAborted(abort);
    say(`demo credentials (${demo.created ? 'created' : 'from the first start'}): ${demo.path}`);
    say(`admin credential for \`payments admin …\` and the demo: ${await ensureDevAdminCredential(platform.deps!.database, config.DATA_DIR)}`);
    say('');
    say('payments platform is up');
    say(`  REST façade (Areas A, B, C)  ${platform.facadeUrl}   health: ${platform.facadeUrl}/healthz`);
    say(`  Connect RPC                  ${platform.rpcUrl}`);
    say(`  Temporal                     ${config.TEMPORAL_ADDRESS}   task queue: ${config.TEMPORAL_TASK_QUEUE}`);
    if (temporalUi) say(`  Temporal Web UI              ${temporalUi}`);
    say(`  PostgreSQL                   ${config.DATABASE_URL!.replace(/\/\/[^@]*@/, '//')}`);
    say('Press Ctrl-C to stop.');
    return stop;
  } catch (error) {
    await stop();
    throw error;
  }
}
