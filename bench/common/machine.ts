import { cpus } from 'node:os';

/** The machine a benchmark ran on, as its results record it. */
export function describeMachine(): { cores: number; cpu: string; platform: string; node: string } {
  return { cores: cpus().length, cpu: cpus()[0]?.model ?? 'unknown', platform: `${process.platform}-${process.arch}`, node: process.version };
}
