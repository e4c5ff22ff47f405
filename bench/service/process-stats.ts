import { readFileSync } from 'node:fs';
import { childPids, procStatFields } from '../../tools/local-stack/process-tree';

const CLOCK_TICKS_PER_SECOND = 100;

/** CPU seconds (user + system) a process has used so far, from /proc (Linux); 0 elsewhere. */
export function cpuSeconds(pid: number): number {
  const fields = procStatFields(pid);
  return fields ? (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND : 0;
}

/** Resident memory of a process in bytes, from /proc (Linux); 0 elsewhere. */
export function residentBytes(pid: number): number {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** CPU seconds of a process and its live children (an API supervisor's serving processes). */
export function treeCpuSeconds(pid: number): number {
  return childPids(pid).reduce((sum, child) => sum + cpuSeconds(child), cpuSeconds(pid));
}

/** Cores each named process, with its children, kept busy between `start()` and `stop()` (1.0 = one core all the time). */
export class CpuMeter {
  private readonly before = new Map<string, number>();
  private startedAt = 0;

  constructor(private readonly pids: Record<string, number>) {}

  start(): void {
    this.startedAt = performance.now();
    for (const [name, pid] of Object.entries(this.pids)) this.before.set(name, treeCpuSeconds(pid));
  }

  stop(): Record<string, number> {
    const seconds = (performance.now() - this.startedAt) / 1000;
    return Object.fromEntries(
      Object.entries(this.pids).map(([name, pid]) => [name, Math.round(((treeCpuSeconds(pid) - (this.before.get(name) ?? 0)) / seconds) * 100) / 100]),
    );
  }
}
