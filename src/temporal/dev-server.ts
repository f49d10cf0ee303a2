/**
 * The Temporal dev server (with Web UI) for `npm start` when `TEMPORAL_ADDRESS` is unset (platform decisions §1).
 * State is a SQLite file under the data directory, so workflows survive a restart of the stack.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { waitForPort } from '../net';
import path from 'node:path';
import { ensureTemporalCli } from './cli-binary';
import { devServerSearchAttributeArgs } from './search-attributes';

export interface TemporalDevServer {
  address: string;
  /** Absent when started without its Web UI (`uiPort` 0). */
  uiUrl?: string;
  stop(): Promise<void>;
}

/**
 * Persistence settings of the dev server's SQLite file. By default every Temporal write (a workflow start, each
 * workflow task, timer and signal) is a rollback-journal transaction with two fsyncs, which capped the dev server at
 * about 36 workflow starts per second (bench `payins`). WAL with synchronous=NORMAL fsyncs only at
 * checkpoints: a crash of the process loses nothing; a power loss may lose the last transactions but never corrupts
 * the file — the right trade for a development stack. busy_timeout lets its connections wait instead of failing.
 */
export const DEV_SERVER_TUNING = [
  '--sqlite-pragma',
  'journal_mode=wal',
  '--sqlite-pragma',
  'synchronous=normal',
  '--sqlite-pragma',
  'busy_timeout=5000',
];

/** Stops a child process: SIGTERM, then SIGKILL after `graceSeconds`. */
export async function stopChild(child: ChildProcess, graceSeconds = 10): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), graceSeconds * 1000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/**
 * Starts `temporal server start-dev` on 127.0.0.1, with the payment search attributes registered.
 * @throws when no CLI can be found or built, or the server does not open its port within 60 s.
 */
export async function startTemporalDevServer(options: {
  dataDirectory: string;
  port?: number;
  uiPort?: number;
  namespace?: string;
  log?: (line: string) => void;
  /** Stops the server and rejects with StartupAborted when it fires before the server listens. */
  abort?: AbortSignal;
}): Promise<TemporalDevServer> {
  const log = options.log ?? (() => undefined);
  const executable = ensureTemporalCli(log);
  if (!executable) throw new Error('no Temporal CLI found and no Go toolchain to build one; set TEMPORAL_ADDRESS');
  const port = options.port ?? 7233;
  const uiPort = options.uiPort ?? 8233;
  const ui = uiPort ? ['--ui-port', String(uiPort)] : ['--headless'];
  mkdirSync(options.dataDirectory, { recursive: true });
  const child = spawn(
    executable,
    [
      'server',
      'start-dev',
      '--ip',
      '127.0.0.1',
      '--port',
      String(port),
      ...ui,
      '--db-filename',
      path.join(options.dataDirectory, 'temporal.sqlite'),
      '--namespace',
      options.namespace ?? 'default',
      '--log-level',
      'error',
      ...DEV_SERVER_TUNING,
      // The payment search attributes the workflows upsert (registered again at every start: a no-op once there).
      ...devServerSearchAttributeArgs(),
    ],
    // Its own process group: a terminal Ctrl-C reaches only us, and we stop it after the worker has drained.
    { stdio: ['ignore', 'ignore', 'pipe'], detached: true },
  );
  child.stderr?.on('data', (chunk: Buffer) => log(chunk.toString().trimEnd()));
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code) => reject(new Error(`temporal dev server exited early (code ${code})`))),
  );
  exited.catch(() => undefined);
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const stop = async () => {
    process.removeListener('exit', killOnExit);
    await stopChild(child);
  };
  try {
    await Promise.race([waitForPort('127.0.0.1', port, 60, options.abort), exited]);
    if (uiPort) await Promise.race([waitForPort('127.0.0.1', uiPort, 60, options.abort), exited]);
  } catch (error) {
    await stop();
    throw error;
  }
  return { address: `127.0.0.1:${port}`, uiUrl: uiPort ? `http://127.0.0.1:${uiPort}` : undefined, stop };
}
