import { DriverClient } from '../driver-client';
import type { NonStreamPlan } from '../bench-options';
import type { LoadPlan, LoadResult } from '../../common/driver-protocol';
import { CpuMeter } from '../process-stats';
import { sideFigures } from '../results-model';
import type { NonStreamLevel, ProfileSummary } from '../results-model';
import { startServiceStack } from '../../common/service-stack';
import { round } from '../../common/stats';
import { profileApi } from './comparison';

/** Whole JSON answers from the synthetic engine at zero delay: what the request path itself sustains. */
export async function runNonStream(
  plan: NonStreamPlan,
  profile: boolean,
  apiProcesses: number,
): Promise<{ levels: NonStreamLevel[]; profiles: ProfileSummary[] }> {
  const engine = { kind: 'synthetic', tokens: 64, tokenIntervalMs: 0, slots: 2048, contextSize: 4096 } as const;
  const stack = await startServiceStack('non-stream', engine, apiProcesses);
  const load = await DriverClient.start('load-generator', 'http-load-driver.ts', stack.target);
  const meter = new CpuMeter({ ...stack.pids, load: load.pid });
  const levels: NonStreamLevel[] = [];
  const profiles: ProfileSummary[] = [];
  try {
    for (const concurrency of plan.levels) {
      const loadPlan: LoadPlan = {
        concurrency,
        requests: 1_000_000,
        durationMs: plan.durationMs,
        hardStopMs: plan.durationMs * 3 + 15_000,
        warmupRequests: Math.max(concurrency, 200),
        warmupMaxTokens: 64,
        stream: false,
        maxTokens: 64,
        requestTimeoutMs: 60_000,
      };
      const runs: LoadResult[] = [];
      const cpu: Array<Record<string, number>> = [];
      for (let repeat = 0; repeat < plan.repeats; repeat += 1) {
        meter.start();
        const result = await load.run(loadPlan);
        cpu.push(meter.stop());
        runs.push(result);
        console.log(
          `  c=${concurrency} non-stream: ${result.ok} ok, ${result.errors} errors, ${round(result.requestsPerSecond, 1)} req/s, ` +
            `latency p50 ${round(result.latencyMs.p50, 2)} p99 ${round(result.latencyMs.p99, 2)} ms, cpu ${JSON.stringify(cpu[cpu.length - 1])}` +
            `${result.errorSamples[0] ? `; ${result.errorSamples[0]}` : ''}`,
        );
      }
      if (profile && concurrency === Math.max(...plan.levels.filter((level) => level <= 100))) {
        profiles.push(await profileApi(stack, `non-stream-c${concurrency}`, () => load.run(loadPlan)));
      }
      levels.push({ concurrency, service: sideFigures(runs, cpu) });
    }
    return { levels, profiles };
  } finally {
    await load.close();
    await stack.stop();
  }
}
