/** A repeat within this window is the same Ctrl-C relayed twice (terminal group + tsx), not a second request. */
const DUPLICATE_SIGNAL_WINDOW_MILLISECONDS = 1000;

/**
 * Graceful shutdown: the first SIGINT/SIGTERM runs `stop` (drain, then stop everything started) and exits 0;
 * another signal later than one second exits at once with 130. `signals`: the ones obeyed (a child of
 * `payments cluster up` obeys SIGTERM only: a terminal's Ctrl-C reaches the whole process group, and the supervisor
 * stops its children in order itself).
 */
export function stopOnSignals(stop: () => Promise<void>, log: (line: string) => void, signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM']): void {
  let stoppingSince = 0;
  const handler = (signal: NodeJS.Signals) => {
    if (stoppingSince) {
      if (Date.now() - stoppingSince < DUPLICATE_SIGNAL_WINDOW_MILLISECONDS) return;
      log(`${signal} again: exiting now`);
      process.exit(130);
    }
    stoppingSince = Date.now();
    log(`${signal}: draining and stopping`);
    stop().then(
      () => process.exit(0),
      (error: unknown) => {
        log(`error while stopping: ${String(error)}`);
        process.exit(1);
      },
    );
  };
  for (const signal of signals) process.on(signal, handler);
  // Not obeyed, but not fatal either (Node's default for SIGINT would exit at once).
  if (!signals.includes('SIGINT')) process.on('SIGINT', () => undefined);
}
