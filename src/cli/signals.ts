/** A repeat within this window is the same Ctrl-C relayed twice (terminal group + tsx), not a second request. */
const DUPLICATE_SIGNAL_WINDOW_MILLISECONDS = 1000;

/**
 * Graceful shutdown: the first SIGINT/SIGTERM runs `stop` (drain, then stop everything started) and exits 0;
 * another signal later than one second exits at once with 130.
 */
export function stopOnSignals(stop: () => Promise<void>, log: (line: string) => void): void {
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
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
}
