import { StartupAborted } from '../net';

/** A repeat within this window is the same Ctrl-C relayed twice (terminal group + tsx), not a second request. */
const DUPLICATE_SIGNAL_WINDOW_MILLISECONDS = 1000;

/**
 * Longest a start-up interrupted by a signal takes to stop what it started before the process exits anyway (its exit
 * handlers then kill the Temporal server and stop PostgreSQL at once): within the 10 s a supervisor (Docker, systemd,
 * `payments cluster up`) waits before it kills.
 */
export const STARTUP_STOP_SECONDS = 7;

/** What a command that starts something (serve, dev, cluster up) tells the signal handling. */
export interface Lifecycle {
  /** Aborted by the first SIGINT/SIGTERM that arrives before start-up finished: the start-up stops at its next step. */
  readonly abort: AbortSignal;
  /** Start-up finished: the first signal from now on drains and stops with `stop`, then exits 0. */
  started(stop: () => Promise<void>): void;
  /** Start-up failed: exits 0 when a signal stopped it (StartupAborted), else prints `error` in one line and exits 1. */
  failed(error: unknown): never;
}

/**
 * Obeys SIGINT/SIGTERM from the moment it is called (call it before anything starts; the Temporal SDK's own handlers
 * are off, src/worker.ts). During start-up the first signal logs `<SIGNAL>: stopping start-up` and aborts it: the
 * start-up stops what it started and the process exits 0, or exits 1 after STARTUP_STOP_SECONDS. Once started, the
 * first signal logs `<SIGNAL>: draining and stopping`, runs `stop` (drain, then stop everything started) and exits 0.
 * Another signal later than one second exits at once with 130. `signals`: the ones obeyed (a child of
 * `payments cluster up` obeys SIGTERM only: a terminal's Ctrl-C reaches the whole process group, and the supervisor
 * stops its children in order itself).
 */
export function obeySignals(log: (line: string) => void, signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM']): Lifecycle {
  const controller = new AbortController();
  let stoppingSince = 0;
  let stop: (() => Promise<void>) | undefined;
  const runStop = (run: () => Promise<void>) => {
    run().then(
      () => process.exit(0),
      (error: unknown) => {
        log(`error while stopping: ${String(error)}`);
        process.exit(1);
      },
    );
  };
  const handler = (signal: NodeJS.Signals) => {
    if (stoppingSince) {
      if (Date.now() - stoppingSince < DUPLICATE_SIGNAL_WINDOW_MILLISECONDS) return;
      log(`${signal} again: exiting now`);
      process.exit(130);
    }
    stoppingSince = Date.now();
    if (stop) {
      log(`${signal}: draining and stopping`);
      runStop(stop);
      return;
    }
    log(`${signal}: stopping start-up`);
    controller.abort(new StartupAborted(signal));
    setTimeout(() => {
      log(`start-up did not stop within ${STARTUP_STOP_SECONDS} s of ${signal}: exiting now`);
      process.exit(1);
    }, STARTUP_STOP_SECONDS * 1000);
  };
  for (const signal of signals) process.on(signal, handler);
  // Not obeyed, but not fatal either (Node's default for SIGINT would exit at once).
  if (!signals.includes('SIGINT')) process.on('SIGINT', () => undefined);
  return {
    abort: controller.signal,
    started(running) {
      stop = running;
      // The signal came after the last step of start-up looked: stop what it started now.
      if (controller.signal.aborted) runStop(running);
    },
    failed(error) {
      if (controller.signal.aborted) {
        log('start-up stopped');
        process.exit(0);
      }
      log(error instanceof Error ? error.message : String(error));
      process.exit(1);
    },
  };
}
