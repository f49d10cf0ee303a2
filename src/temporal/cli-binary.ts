/**
 * Makes the Temporal CLI (dev server + Web UI) available, in this order :
 *   1. `TEMPORAL_CLI_PATH`, 2. `temporal` on PATH, 3. the per-user cache
 *   (`$XDG_CACHE_HOME/payments-platform/temporal-cli-v1.5.1/temporal`), 4. `go install …@v1.5.1` into that cache
 *   (minutes, once per machine), 5. nothing: callers fall back to the SDK's own download where internet exists.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const TEMPORAL_CLI_VERSION = 'v1.5.1';

/** The cache directory holding the built CLI; outside the repository so clones share it. */
export function temporalCacheDirectory(): string {
  return path.join(platformCacheDirectory(), `temporal-cli-${TEMPORAL_CLI_VERSION}`);
}

/** `$XDG_CACHE_HOME/payments-platform` (else `~/.cache/payments-platform`): built tools shared by every clone. */
export function platformCacheDirectory(): string {
  const base = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'payments-platform');
}

/** The Go toolchain: `go` on PATH, else /usr/local/go/bin/go, else undefined. */
export function goBinary(): string | undefined {
  return onPath('go') ?? (existsSync('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : undefined);
}

export function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export function onPath(command: string): string | undefined {
  for (const directory of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!directory) continue;
    const candidate = path.join(directory, command);
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}

/** Returns the path of an existing CLI without building anything, or undefined. */
export function findTemporalCli(): string | undefined {
  const fromEnvironment = process.env.TEMPORAL_CLI_PATH;
  if (fromEnvironment) {
    if (!isExecutable(fromEnvironment)) throw new Error(`TEMPORAL_CLI_PATH: ${fromEnvironment} is not an executable`);
    return fromEnvironment;
  }
  const found = onPath('temporal');
  if (found) return found;
  const cached = path.join(temporalCacheDirectory(), 'temporal');
  return isExecutable(cached) ? cached : undefined;
}

/**
 * `go install` of `packages` with GOBIN = `directory` (the cache), logging one line first (it takes minutes).
 * @throws when no Go toolchain is installed or the build fails
 */
export function goInstall(directory: string, packages: string[], what: string, log: (line: string) => void): void {
  const go = goBinary();
  if (!go) throw new Error(`${what} is not built and no Go toolchain is installed to build it`);
  mkdirSync(directory, { recursive: true });
  log(`building ${what} with go install into ${directory} (first time only, a few minutes)`);
  const result = spawnSync(go, ['install', ...packages], {
    env: { ...process.env, GOBIN: directory, GOFLAGS: '-mod=mod' },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  if (result.status !== 0) throw new Error(`go install of ${what} failed (exit ${result.status})`);
}

/**
 * Returns the CLI path, building it with `go install` into the cache when needed.
 * Returns undefined when no CLI exists and Go is not installed.
 * @param log receives one line before a build starts (it takes minutes).
 */
export function ensureTemporalCli(log: (line: string) => void = () => undefined): string | undefined {
  const existing = findTemporalCli();
  if (existing) return existing;
  if (!goBinary()) return undefined;
  const directory = temporalCacheDirectory();
  goInstall(directory, [`github.com/temporalio/cli/cmd/temporal@${TEMPORAL_CLI_VERSION}`], `the Temporal CLI ${TEMPORAL_CLI_VERSION}`, log);
  const built = path.join(directory, 'temporal');
  execFileSync(built, ['--version'], { stdio: 'ignore' });
  return built;
}

// `tsx src/temporal/cli-binary.ts` prints the path (used by .ci/run and docs).
if (require.main === module) {
  const found = ensureTemporalCli((line) => process.stderr.write(`${line}\n`));
  if (!found) {
    process.stderr.write('no Temporal CLI and no Go toolchain; the SDK will download one where internet exists\n');
    process.exit(1);
  }
  process.stdout.write(`${found}\n`);
}
