/**
 * What must be stopped if the benchmark is interrupted (Ctrl-C): the Redis, API and worker
 * processes it started and its driver children, which would otherwise outlive it.
 */
const tasks = new Set<() => Promise<unknown>>();

/** Registers `task` until the returned function is called (when the thing was stopped normally). */
export function whenInterrupted(task: () => Promise<unknown>): () => void {
  tasks.add(task);
  return () => tasks.delete(task);
}

export function stopEverythingOnSignals(): void {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      console.error(`\n${signal}: stopping the processes the benchmark started…`);
      void Promise.allSettled([...tasks].map((task) => task())).then(() => process.exit(130));
    });
  }
}
