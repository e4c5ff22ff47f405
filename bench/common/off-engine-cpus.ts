import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { allowedCpus, parseCpuList } from '@app/worker/engine';

/** Sets the CPUs (a Linux CPU list) every thread of `pid` may run on; threads and processes it starts later inherit them. */
export function pinProcess(pid: number, cpuList: string): void {
  execFileSync('taskset', ['--all-tasks', '--pid', '--cpu-list', cpuList, String(pid)], { stdio: 'ignore' });
}

/**
 * Runs `run` with this process, and so every process it starts meanwhile (load generator, API,
 * Redis, worker), off `engineCpus`, the ENGINE_CPUS both sides keep llama.cpp's threads on; the
 * engines move those threads back themselves. Then restores this process's CPUs. Without
 * `engineCpus` it only runs `run`.
 */
export async function offEngineCpus<T>(engineCpus: string | undefined, run: () => Promise<T>): Promise<T> {
  if (engineCpus === undefined) return run();
  const allowed = allowedCpus(readFileSync('/proc/self/status', 'utf8'));
  const engine = parseCpuList(engineCpus);
  const others = allowed.filter((cpu) => !engine.includes(cpu));
  if (others.length === 0) throw new Error(`--engine-cpus=${engineCpus} leaves no CPU for the load generator, API and Redis`);
  pinProcess(process.pid, others.join(','));
  try {
    return await run();
  } finally {
    pinProcess(process.pid, allowed.join(','));
  }
}
