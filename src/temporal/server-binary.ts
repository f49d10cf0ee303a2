/**
 * The full Temporal server and its SQL schema tool for `payments cluster up`, found or built like the CLI
 * (cli-binary.ts), in this order:
 *   1. `TEMPORAL_SERVER_PATH` and `TEMPORAL_SQL_TOOL_PATH`, 2. the per-user cache
 *   (`$XDG_CACHE_HOME/payments-platform/temporal-server-v1.32.1/{server,sql}`), 3. one `go install` of both
 *   commands into that cache (about 3.5 minutes and 2.6 GB of Go build cache the first time).
 * The Web UI server (`temporalio/ui-server`): `TEMPORAL_UI_SERVER_PATH`, else its own cache directory
 * (`temporal-ui-server-v2.55.0/server`), else one `go install` into it (about a minute; the cluster runs without a
 * UI when that fails).
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { goInstall, isExecutable, platformCacheDirectory } from './cli-binary';

export const TEMPORAL_SERVER_VERSION = 'v1.32.1';
export const TEMPORAL_UI_SERVER_VERSION = 'v2.55.0';

export interface TemporalServerBinaries {
  /** `go.temporal.io/server/cmd/server` */
  server: string;
  /** `go.temporal.io/server/cmd/tools/sql` (temporal-sql-tool) */
  sql: string;
}

export function temporalServerCacheDirectory(): string {
  return path.join(platformCacheDirectory(), `temporal-server-${TEMPORAL_SERVER_VERSION}`);
}

export function temporalUiServerCacheDirectory(): string {
  return path.join(platformCacheDirectory(), `temporal-ui-server-${TEMPORAL_UI_SERVER_VERSION}`);
}

function fromEnvironment(variable: string): string | undefined {
  const value = process.env[variable];
  if (!value) return undefined;
  if (!isExecutable(value)) throw new Error(`${variable}: ${value} is not an executable`);
  return value;
}

/** The server and SQL tool without building anything, or undefined when either is missing. */
export function findTemporalServer(): TemporalServerBinaries | undefined {
  const directory = temporalServerCacheDirectory();
  const server = fromEnvironment('TEMPORAL_SERVER_PATH') ?? path.join(directory, 'server');
  const sql = fromEnvironment('TEMPORAL_SQL_TOOL_PATH') ?? path.join(directory, 'sql');
  return isExecutable(server) && isExecutable(sql) ? { server, sql } : undefined;
}

/**
 * The server and SQL tool, built with `go install` into the cache when absent.
 * @throws when they are absent and cannot be built
 */
export function ensureTemporalServer(log: (line: string) => void = () => undefined): TemporalServerBinaries {
  const existing = findTemporalServer();
  if (existing) return existing;
  const directory = temporalServerCacheDirectory();
  goInstall(
    directory,
    [`go.temporal.io/server/cmd/server@${TEMPORAL_SERVER_VERSION}`, `go.temporal.io/server/cmd/tools/sql@${TEMPORAL_SERVER_VERSION}`],
    `the Temporal server ${TEMPORAL_SERVER_VERSION}`,
    log,
  );
  const built = { server: path.join(directory, 'server'), sql: path.join(directory, 'sql') };
  execFileSync(built.sql, ['--help'], { stdio: 'ignore' });
  return built;
}

/** The Web UI server when present (TEMPORAL_UI_SERVER_PATH or the cache), else undefined; builds nothing. */
export function findTemporalUiServer(): string | undefined {
  const configured = fromEnvironment('TEMPORAL_UI_SERVER_PATH');
  if (configured) return configured;
  const cached = path.join(temporalUiServerCacheDirectory(), 'server');
  return isExecutable(cached) ? cached : undefined;
}

/** The Web UI server, built with `go install` into its cache directory when absent. */
export function ensureTemporalUiServer(log: (line: string) => void = () => undefined): string {
  const existing = findTemporalUiServer();
  if (existing) return existing;
  const directory = temporalUiServerCacheDirectory();
  goInstall(directory, [`github.com/temporalio/ui-server/v2/cmd/server@${TEMPORAL_UI_SERVER_VERSION}`], `the Temporal Web UI server ${TEMPORAL_UI_SERVER_VERSION}`, log);
  return path.join(directory, 'server');
}

// `tsx src/temporal/server-binary.ts [--ui]` prints the paths (building what is missing).
if (require.main === module) {
  const say = (line: string) => process.stderr.write(`${line}\n`);
  const found = ensureTemporalServer(say);
  process.stdout.write(`${found.server}\n${found.sql}\n`);
  if (process.argv.includes('--ui')) process.stdout.write(`${ensureTemporalUiServer(say)}\n`);
}
