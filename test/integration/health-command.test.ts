/**
 * `payments health` (the container healthcheck, docs/operations.md "Health checks") against a running
 * `payments serve`: each role's probe passes while the role works, and fails, naming what, when it is broken:
 * the api and the façade when the database is gone, the worker when no worker of this host polls its task queue,
 * every role when nothing listens.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createDatabase } from '../../src/db/knex';
import { freePort } from '../../src/net';
import { createServiceCredential } from '../../src/service-credentials';
import { writeCredentialsFile } from '../../src/service-credentials/files';
import { createTestDatabase } from '../support/platform';

const BIN = path.join(__dirname, '..', '..', 'bin', 'payments');

describe('payments health', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let serve: ChildProcess;
  let environment: NodeJS.ProcessEnv;
  let directory: string;

  /** Runs `payments health` with `environment` (and `overrides`): its exit status and lines. */
  const health = async (roles: string, overrides: Record<string, string> = {}): Promise<{ status: number | null; lines: string[] }> => {
    const child = spawn(process.execPath, [BIN, 'health', '--roles', roles], { env: { ...environment, ...overrides }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const status = await new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
    return { status, lines: output.trim().split('\n') };
  };

  beforeAll(async () => {
    directory = mkdtempSync(path.join(os.tmpdir(), 'payments-health-'));
    database = await createTestDatabase();
    // What a façade presents to the api role, and what the api container's probe presents too.
    const knex = createDatabase(database.url, 1);
    const created = await createServiceCredential(knex, { name: 'health test', scopes: ['facade'] });
    await knex.destroy();
    const credentials = path.join(directory, 'facade.json');
    writeCredentialsFile(credentials, { credential_id: created.id, token: created.token, scopes: created.scopes });
    environment = {
      ...process.env,
      DATABASE_URL: database.url,
      TEMPORAL_ADDRESS: process.env.PAYMENTS_TEST_TEMPORAL_ADDRESS,
      TEMPORAL_TASK_QUEUE: `health-${process.pid}`,
      HTTP_PORT: String(await freePort()),
      RPC_PORT: String(await freePort()),
      RPC_TOKEN_FILE: credentials,
      LOG_LEVEL: 'warn',
      PLATFORM_KEY_DIR: process.env.PAYMENTS_TEST_KEY_DIR,
      RECONCILE_INTERVAL_SECONDS: '0',
      SHUTDOWN_GRACE_SECONDS: '2',
    };
    serve = spawn(process.execPath, [BIN, 'serve', '--roles', 'api,facade,worker'], { env: environment, stdio: ['ignore', 'ignore', 'pipe'] });
    await new Promise<void>((resolve, reject) => {
      let text = '';
      serve.stderr!.on('data', (chunk: Buffer) => {
        text += chunk.toString();
        if (text.includes('serving roles')) resolve();
      });
      serve.once('exit', (code) => reject(new Error(`serve exited (${code}): ${text}`)));
    });
  }, 180_000);

  afterAll(async () => {
    if (serve && serve.exitCode === null) {
      const exited = new Promise((resolve) => serve.once('exit', resolve));
      serve.kill('SIGTERM');
      await exited;
    }
    await database?.drop();
    rmSync(directory, { recursive: true, force: true });
  });

  it('passes for every role that works, one line each', async () => {
    const result = await health('api,facade,worker');
    expect(result.lines).toEqual([
      expect.stringMatching(/^api: ok: HealthService at http:\/\/127\.0\.0\.1:\d+ answered ok \(database ok, temporal ok\)$/),
      expect.stringMatching(/^facade: ok: http:\/\/127\.0\.0\.1:\d+\/healthz answered 200$/),
      expect.stringMatching(/^worker: ok: polls health-\d+ at \S+ \(workflow \d+ s ago, activity \d+ s ago\)$/),
    ]);
    expect(result.status).toBe(0);
  }, 120_000);

  it('fails the worker of a task queue no worker of this host polls', async () => {
    const result = await health('worker', { TEMPORAL_TASK_QUEUE: `nobody-${process.pid}` });
    expect(result).toEqual({ status: 1, lines: [expect.stringMatching(/^worker: failing: no worker of this host \(.+\) polls the workflow tasks of nobody-\d+/)] });
  }, 120_000);

  it('fails the api without a credential: the probe proves it authenticates like any caller', async () => {
    const result = await health('api', { RPC_TOKEN_FILE: '' });
    expect(result.status).toBe(1);
    expect(result.lines).toEqual([expect.stringMatching(/^api: failing: .*unauthenticated/i)]);
  }, 120_000);

  it('fails the api and the façade once the database is gone, and every role once nothing listens', async () => {
    await database.drop();
    const gone = await health('api,facade');
    expect(gone.status).toBe(1);
    expect(gone.lines).toEqual([
      // Degraded, or refused outright: the credential cannot be looked up either.
      expect.stringMatching(/^api: failing: (HealthService at \S+ answered degraded: database .+, temporal ok|\[internal\] )/),
      expect.stringMatching(/^facade: failing: \S+\/healthz answered 503 /),
    ]);

    const exited = new Promise((resolve) => serve.once('exit', resolve));
    serve.kill('SIGTERM');
    await exited;
    const stopped = await health('api,facade');
    expect(stopped.status).toBe(1);
    expect(stopped.lines).toEqual([expect.stringMatching(/^api: failing: /), expect.stringMatching(/^facade: failing: /)]);
  }, 120_000);
});
