/** Stops what global setup started: APIs and workers first (they drain), then Redis. */
export default async function globalTeardown(): Promise<void> {
  const stack = globalThis.__E2E_STACK__;
  if (!stack) return;
  await Promise.all(stack.processes.map((process) => process.stop('SIGTERM', 10_000)));
  await stack.redis?.stop();
}
