/**
 * `npm run bench:cpu-share`: how much llama.cpp on the CPU loses when other work shares the
 * machine, which is where the service stands in `npm run bench`'s llama phase: its API, Redis, load
 * generator and the worker's own thread use part of a core beside the engine, while the engine
 * alone has the machine to itself. The engine alone (the llama phase's engine driver, same
 * settings and prompts) runs the same closed loops under four conditions, alternating each round:
 *
 * - alone: nothing else running, the scheduler free to move its threads (the llama phase's engine side);
 * - beside a neighbour: a process busy `--neighbour-duty` of one core (0.4 by default, about what
 *   the service's other processes use at c=10 on 2 cores), in 5 ms bursts;
 * - pinned: the engine's process held on the last CPU (`taskset`), nothing else running;
 * - pinned, neighbour elsewhere: the engine on the last CPU, the neighbour on the first.
 *
 * Writes bench/results/cpu-sharing.json. Linux only (`taskset`), and at least 2 CPUs.
 *
 *   npm run bench:cpu-share -- [--model=models/tiny-chat.gguf] [--neighbour-duty=0.4] [--rounds=3]
 */
import { execFileSync, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { stopEverythingOnSignals, whenInterrupted } from '../common/cleanup';
import { numberOption, optionValue } from '../common/command-line';
import { pinProcess } from '../common/off-engine-cpus';
import { DriverClient } from '../service/driver-client';
import { FULL_PLAN, llamaEngine, llamaLevelPlan } from '../service/bench-options';
import { median, round } from '../common/stats';

const cpus = availableParallelism();
const duty = numberOption('neighbour-duty', 0.4);
const rounds = numberOption('rounds', 3);
const { llama } = FULL_PLAN;
const engine = llamaEngine(llama, resolve(optionValue('model') ?? 'models/tiny-chat.gguf'), 'false');
/** The llama phase's c=1 and c=10 levels: past the engine's sequences, more clients only wait longer. */
const plans = llama.levels.filter(({ concurrency }) => concurrency <= 10).map(({ concurrency, requests }) => llamaLevelPlan(llama, concurrency, requests));

const ALL_CPUS = `0-${cpus - 1}`;
const FIRST_CPU = '0';
const LAST_CPU = String(cpus - 1);

/** A process busy `share` of each 5 ms, on whichever CPU it is given. */
function startNeighbour(share: number): ChildProcess {
  const code = `const busy=${5 * share},idle=${5 * (1 - share)};const spin=()=>{const until=performance.now()+busy;while(performance.now()<until);setTimeout(spin,idle)};spin();`;
  return spawn(process.execPath, ['-e', code], { stdio: 'ignore' });
}

interface Condition {
  name: string;
  engineCpus: string;
  /** Where the neighbour runs; absent: no neighbour. */
  neighbourCpus?: string;
}

const CONDITIONS: Condition[] = [
  { name: 'alone', engineCpus: ALL_CPUS },
  { name: 'beside a neighbour', engineCpus: ALL_CPUS, neighbourCpus: ALL_CPUS },
  { name: 'pinned', engineCpus: LAST_CPU },
  { name: 'pinned, neighbour elsewhere', engineCpus: LAST_CPU, neighbourCpus: FIRST_CPU },
];

async function main(): Promise<void> {
  if (cpus < 2) throw new Error('needs at least 2 CPUs');
  execFileSync('taskset', ['--version'], { stdio: 'ignore' });
  stopEverythingOnSignals();
  const driver = await DriverClient.start('engine-alone', 'engine-driver.ts', engine);
  const runs: Array<{ condition: string; concurrency: number; round: number; tokensPerSecond: number; itlP50Ms: number }> = [];
  try {
    for (let index = 0; index < rounds; index += 1) {
      // Each round in another order, so that a slower minute of a shared machine falls on every condition.
      const order = CONDITIONS.map((_, position) => CONDITIONS[(position + index) % CONDITIONS.length]);
      for (const condition of order) {
        pinProcess(driver.pid, condition.engineCpus);
        const neighbour = condition.neighbourCpus === undefined ? undefined : startNeighbour(duty);
        const forgetNeighbour = whenInterrupted(() => Promise.resolve(neighbour?.kill('SIGKILL')));
        try {
          if (neighbour?.pid !== undefined && condition.neighbourCpus !== undefined) pinProcess(neighbour.pid, condition.neighbourCpus);
          for (const plan of plans) {
            const result = await driver.run(plan);
            if (result.errors > 0) throw new Error(`${result.errors} generations failed: ${result.errorSamples.join('; ')}`);
            runs.push({
              condition: condition.name,
              concurrency: plan.concurrency,
              round: index + 1,
              tokensPerSecond: round(result.tokensPerSecond, 0),
              itlP50Ms: round(result.itlMs.p50),
            });
            console.log(
              `round ${index + 1}  c=${String(plan.concurrency).padEnd(3)} ${condition.name.padEnd(28)} ${Math.round(result.tokensPerSecond)} tokens/s, ITL p50 ${round(result.itlMs.p50)} ms`,
            );
          }
        } finally {
          neighbour?.kill('SIGKILL');
          forgetNeighbour();
        }
      }
    }
  } finally {
    await driver.close();
  }
  const medians = CONDITIONS.flatMap(({ name }) =>
    plans.map(({ concurrency }) => {
      const rates = runs.filter((run) => run.condition === name && run.concurrency === concurrency).map((run) => run.tokensPerSecond);
      return { condition: name, concurrency, medianTokensPerSecond: Math.round(median(rates)) };
    }),
  );
  console.log(`\nmedian tokens/s of ${rounds} rounds (neighbour busy ${duty} of a core):`);
  for (const row of medians) console.log(`  c=${String(row.concurrency).padEnd(3)} ${row.condition.padEnd(28)} ${row.medianTokensPerSecond}`);
  mkdirSync('bench/results', { recursive: true });
  const settings = {
    model: optionValue('model') ?? 'models/tiny-chat.gguf',
    cpus,
    neighbourDuty: duty,
    rounds,
    sequences: llama.parallelSequences,
    threads: llama.threads,
    maxTokens: llama.maxTokens,
  };
  writeFileSync('bench/results/cpu-sharing.json', `${JSON.stringify({ date: new Date().toISOString(), settings, medians, runs }, null, 2)}\n`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
