/**
 * With PAYMENTS_TEST_CLUSTER (the cluster.json of a running `payments cluster up`, set by `npm run test:cluster`),
 * the run uses that cluster's PostgreSQL server and Temporal frontend instead of starting its own, and
 * test/support/platform.ts points the test files it can at the cluster's façade and RPC.
 *
 * Once per `npm test` run: PostgreSQL (the server at TEST_DATABASE_URL / DATABASE_URL when set, else an embedded
 * cluster in a temporary directory), a migrated template database, the Temporal dev server (the CLI found or
 * built by src/temporal/cli-binary.ts), one workflow bundle and Debian's chromium for the browser tests
 * (test/support/chromium.ts). Test files then clone the template into their own
 * database and use their own task queue, so files are isolated from each other.
 */
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres } from '../../src/db/embedded';
import { createDatabase, migrateToLatest } from '../../src/db/knex';
import { ensureTemporalCli } from '../../src/temporal/cli-binary';
import { PAYMENT_SEARCH_ATTRIBUTE_KEYS } from '../../src/temporal/search-attributes';
import { bundleWorkflows } from '../../src/worker';
import { ensureChromium } from './chromium';
import { readClusterState } from './cluster';


export default async function globalSetup(): Promise<void> {
  const started = Date.now();
  const directory = mkdtempSync(path.join(os.tmpdir(), 'payments-test-'));
  chmodSync(directory, 0o755); // as root, PostgreSQL runs as the postgres user, which must enter this directory
  // Run last by global-teardown (stops run in reverse): the workflow bundle, test keys and data go with it.
  const stops: Array<() => Promise<void>> = [async () => rmSync(directory, { recursive: true, force: true })];

  let serverUrl: string;
  const cluster = readClusterState();
  const external = cluster?.databaseUrl || process.env.TEST_DATABASE_URL || process.env.DATABASE_URL;
  if (external) {
    serverUrl = external.replace(/\/[^/]*$/, '');
  } else {
    const embedded = await startEmbeddedPostgres({
      directory: path.join(directory, 'postgres'),
      persistent: false,
      durabilityOff: true,
    });
    stops.push(() => embedded.stop());
    serverUrl = embedded.serverUrl;
  }
  // One template per run, so concurrent runs on a shared server do not collide.
  const TEMPLATE_DATABASE = `payments_test_template_${process.pid}`;
  const admin = new pg.Client({ connectionString: `${serverUrl}/postgres` });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${TEMPLATE_DATABASE}`);
  await admin.query(`CREATE DATABASE ${TEMPLATE_DATABASE}`);
  await admin.end();
  if (external) {
    stops.push(async () => {
      const client = new pg.Client({ connectionString: `${serverUrl}/postgres` });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${TEMPLATE_DATABASE} WITH (FORCE)`);
      await client.end();
    });
  }
  const template = createDatabase(`${serverUrl}/${TEMPLATE_DATABASE}`, 1);
  await migrateToLatest(template);
  await template.destroy();

  let temporalAddress: string;
  if (cluster) {
    temporalAddress = cluster.temporalAddress;
  } else {
    const executable = ensureTemporalCli((line) => process.stderr.write(`${line}\n`));
    const start = () =>
      TestWorkflowEnvironment.createLocal({
        server: {
          ...(executable ? { executable: { type: 'existing-path' as const, path: executable } } : {}),
          ip: '127.0.0.1',
          extraArgs: ['--log-level', 'error'],
          // The payment search attributes the workflows upsert, as every server the platform starts has them.
          searchAttributes: [...PAYMENT_SEARCH_ATTRIBUTE_KEYS],
        },
      });
    // The SDK gives the dev server 5 s to listen; a cold machine (first run of the binary, a busy disk) can miss that
    // once. Up to three tries, on fresh ports, before the run gives up.
    let environment: TestWorkflowEnvironment | undefined;
    for (let attempt = 1; !environment; attempt += 1) {
      try {
        environment = await start();
      } catch (error) {
        if (attempt >= 3) throw error;
        process.stderr.write(`Temporal dev server did not start (attempt ${attempt} of 3): ${(error as Error).message.slice(0, 200)}\n`);
      }
    }
    stops.push(() => environment.teardown());
    temporalAddress = environment.connection.options.address;
  }

  const bundle = await bundleWorkflows();
  const bundlePath = path.join(directory, 'workflow-bundle.js');
  writeFileSync(bundlePath, bundle.code);

  process.env.PAYMENTS_TEST_KEY_DIR = path.join(directory, 'keys');
  process.env.PAYMENTS_TEST_PG_SERVER_URL = serverUrl;
  process.env.PAYMENTS_TEST_TEMPLATE_DATABASE = TEMPLATE_DATABASE;
  process.env.PAYMENTS_TEST_TEMPORAL_ADDRESS = temporalAddress;
  process.env.PAYMENTS_TEST_WORKFLOW_BUNDLE = bundlePath;
  process.env.PAYMENTS_TEST_CHROMIUM = ensureChromium((line) => process.stderr.write(`${line}\n`));
  (globalThis as { __paymentsTestStops?: Array<() => Promise<void>> }).__paymentsTestStops = stops;
  if (cluster) process.stderr.write(`\nagainst the cluster: façade ${cluster.facadeUrl}, rpc ${cluster.rpcUrl}, Temporal ${cluster.temporalAddress}`);
  process.stderr.write(`\ntest services ready in ${((Date.now() - started) / 1000).toFixed(1)}s\n`);
}
