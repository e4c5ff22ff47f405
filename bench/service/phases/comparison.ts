import { writeFileSync, mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { summarizeProfile } from '../cpu-profile-summary';
import { DriverClient } from '../driver-client';
import type { EngineSpec, LoadPlan, LoadResult } from '../../common/driver-protocol';
import { CpuMeter } from '../process-stats';
import { compare, sideFigures } from '../results-model';
import type { ComparisonLevel, ProfileSummary } from '../results-model';
import { ARTIFACTS_DIR, startServiceStack } from '../../common/service-stack';
import type { ServiceStack } from '../../common/service-stack';
import { round } from '../../common/stats';

export interface ComparisonLevelPlan {
  plan: LoadPlan;
  repeats: number;
  /** Run once more with the API under the CPU profiler (not counted in the figures). */
  profile: boolean;
}

export interface ComparisonOutcome {
  levels: ComparisonLevel[];
  profiles: ProfileSummary[];
}

function describe(side: string, plan: LoadPlan, result: LoadResult, cpu?: Record<string, number>): string {
  const cores = cpu
    ? ` cpu ${Object.entries(cpu)
        .map(([name, value]) => `${name} ${value}`)
        .join(', ')}`
    : '';
  const errors = result.errors > 0 ? ` ERRORS ${result.errors}: ${result.errorSamples[0]}` : '';
  return (
    `  c=${plan.concurrency} ${side.padEnd(7)} ${result.ok} ok in ${round(result.elapsedMs / 1000, 1)} s: ` +
    `ttft p50 ${round(result.ttftMs.p50, 2)} p99 ${round(result.ttftMs.p99, 2)} ms, itl p50 ${round(result.itlMs.p50, 2)} ms, ` +
    `${round(result.tokensPerSecond)} tok/s, ${round(result.requestsPerSecond, 1)} req/s, ${round(result.deltaEventsPerSecond)} deltas/s${cores}${errors}` +
    ` (means: ttft ${round(result.ttftMs.mean, 2)}, itl ${round(result.itlMs.mean, 2)} ms)`
  );
}

/** Profiles the API process while `work` runs and saves the raw profile under test-artifacts/bench. */
export async function profileApi(stack: ServiceStack, phase: string, work: () => Promise<unknown>): Promise<ProfileSummary> {
  const { inspector } = stack;
  if (!inspector) throw new Error('profiling needs one API process (--api-processes=1)');
  await inspector.startProfiling();
  const failure = await work().then(
    () => undefined,
    (error: unknown) => (error instanceof Error ? error : new Error(String(error))),
  );
  const profile = await inspector.stopProfiling();
  if (failure !== undefined) throw failure;
  mkdirSync(resolve(ARTIFACTS_DIR, 'profiles'), { recursive: true });
  writeFileSync(resolve(ARTIFACTS_DIR, 'profiles', `${phase}.cpuprofile`), JSON.stringify(profile));
  return summarizeProfile(phase, profile);
}

/**
 * The same closed-loop load against the engine alone (in its own process) and the whole service,
 * level by level, alternating which side goes first on each repeat so that drift in the machine's
 * other load falls on both sides alike.
 */
export async function runComparison(
  label: string,
  engine: EngineSpec,
  levels: ComparisonLevelPlan[],
  apiProcesses: number,
  /** The service's engine, when it is not the one measured alone (the service on node-llama-cpp against llama-server alone). */
  serviceEngine: EngineSpec = engine,
): Promise<ComparisonOutcome> {
  const engineAlone = await DriverClient.start('engine-alone', 'engine-driver.ts', engine);
  let stack: ServiceStack | undefined;
  let load: DriverClient | undefined;
  try {
    // The engine-alone process stays idle while the service runs, and the other way round.
    stack = await startServiceStack(label, serviceEngine, apiProcesses);
    load = await DriverClient.start('load-generator', 'http-load-driver.ts', stack.target);
    const meter = new CpuMeter({ ...stack.pids, load: load.pid });
    const engineMeter = new CpuMeter({ engine: engineAlone.pid });
    const outcome: ComparisonOutcome = { levels: [], profiles: [] };
    for (const { plan, repeats, profile } of levels) {
      const engineRuns: LoadResult[] = [];
      const serviceRuns: LoadResult[] = [];
      const serviceCpu: Array<Record<string, number>> = [];
      const engineCpu: Array<Record<string, number>> = [];
      for (let repeat = 0; repeat < repeats; repeat += 1) {
        const runEngine = async (): Promise<void> => {
          engineMeter.start();
          const result = await engineAlone.run(plan);
          const cpu = engineMeter.stop();
          engineRuns.push(result);
          engineCpu.push(cpu);
          console.log(describe('engine', plan, result, cpu));
        };
        const runService = async (): Promise<void> => {
          meter.start();
          const result = await (load as DriverClient).run(plan);
          const cpu = meter.stop();
          serviceRuns.push(result);
          serviceCpu.push(cpu);
          console.log(describe('service', plan, result, cpu));
        };
        if (repeat % 2 === 0) {
          await runEngine();
          await runService();
        } else {
          await runService();
          await runEngine();
        }
      }
      if (profile) {
        const name = `${label}-c${plan.concurrency}`;
        outcome.profiles.push(await profileApi(stack, name, () => (load as DriverClient).run(plan)));
        console.log(`  c=${plan.concurrency} profiled the API: test-artifacts/bench/profiles/${name}.cpuprofile`);
      }
      outcome.levels.push(compare(plan.concurrency, sideFigures(engineRuns, engineCpu), sideFigures(serviceRuns, serviceCpu)));
    }
    return outcome;
  } finally {
    await load?.close();
    await stack?.stop();
    await engineAlone.close();
  }
}
