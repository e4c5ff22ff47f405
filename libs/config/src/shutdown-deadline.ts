/**
 * Bounds a graceful shutdown. Once the first stop signal arrives, the process exits with an error
 * if it is still running `deadlineMs` later: a shutdown step that waits on Redis while Redis is
 * down (a worker's commands queue until it comes back) would otherwise hold it forever. The
 * deadline is the drain the process promises plus a margin. Its listener goes at the first
 * signal, so Nest's re-raised signal still ends the process as usual. The timer holds the process:
 * a shutdown step waiting on a closed connection holds nothing, and the process would otherwise
 * end with status 0 as if its shutdown had finished.
 */
export function exitIfShutdownOutlasts(deadlineMs: number, signals: NodeJS.Signals[] = ['SIGTERM', 'SIGINT']): void {
  const arm = (signal: NodeJS.Signals): void => {
    for (const other of signals) process.off(other, arm);
    setTimeout(() => {
      console.error(`shutdown did not finish within ${deadlineMs} ms of ${signal} (is Redis reachable?); exiting`);
      process.exit(1);
    }, deadlineMs);
  };
  for (const signal of signals) process.on(signal, arm);
}
