/** Stops what global setup started (one stack per engine): APIs and workers first (they drain), then Redis. */
export default async function globalTeardown(): Promise<void> {
  const stacks = globalThis.__E2E_STACKS__ ?? [];
  globalThis.__E2E_STACKS__ = [];
  for (const stack of stacks) {
    await Promise.all(stack.processes.map((process) => process.stop('SIGTERM', 10_000)));
    await stack.redis?.stop();
  }
}
