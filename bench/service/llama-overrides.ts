import { parseCpuList } from '@app/worker/engine';
import type { LlamaPlan } from './bench-options';

/**
 * The llama phase's plan as given on the command line, for models other than the tiny one: a
 * model of a real shape (`npx tsx tools/make-tiny-model.ts --shape …`) or a GPU wants other levels, answer
 * lengths and sequences than the tiny model on 2 cores.
 *
 *   --llama-levels=1:12,8:32   concurrency[:measured requests] per level (requests: 4 per stream, at least 12)
 *   --max-tokens=N             tokens per answer
 *   --sequences=N              the engine's parallel sequences (the worker's PARALLEL_SEQUENCES)
 *   --threads=N                llama.cpp's CPU threads
 *   --repeats=N                runs of each level per side, alternating which side goes first
 *   --repeat-up-to=N           only levels of at most N streams repeat; the others run once
 *   --engine-cpus=LIST         ENGINE_CPUS of both sides, e.g. 1: llama.cpp on those CPUs, the rest on the others
 */
const NAMES = ['--llama-levels', '--max-tokens', '--sequences', '--threads', '--repeats', '--repeat-up-to', '--engine-cpus'] as const;

function wholeNumber(name: string, text: string): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name}=${text}: a whole number of at least 1 is needed`);
  return value;
}

export function parseLlamaLevels(text: string): LlamaPlan['levels'] {
  return text.split(',').map((level) => {
    const [concurrency = '', requests] = level.split(':');
    const streams = wholeNumber('--llama-levels', concurrency);
    return { concurrency: streams, requests: requests === undefined ? Math.max(12, streams * 4) : wholeNumber('--llama-levels', requests) };
  });
}

/** Takes the llama plan's options out of `argv`: `apply` puts them on a plan (quick or full); `rest` is the other arguments. */
export function takeLlamaOverrides(argv: string[]): { apply: (plan: LlamaPlan) => LlamaPlan; rest: string[] } {
  const rest: string[] = [];
  const given = new Map<(typeof NAMES)[number], string>();
  for (const arg of argv) {
    const [name = '', value] = arg.split(/=(.*)/s);
    const known = NAMES.find((candidate) => candidate === name);
    if (known === undefined) rest.push(arg);
    else if (value === undefined || value === '') throw new Error(`${name} needs a value (${name}=…)`);
    else given.set(known, value);
  }
  const number = (name: (typeof NAMES)[number], fallback: number): number => {
    const value = given.get(name);
    return value === undefined ? fallback : wholeNumber(name, value);
  };
  const levelsText = given.get('--llama-levels');
  const levels = levelsText === undefined ? undefined : parseLlamaLevels(levelsText);
  const engineCpus = given.get('--engine-cpus');
  if (engineCpus !== undefined) parseCpuList(engineCpus);
  const apply = (plan: LlamaPlan): LlamaPlan => {
    const chosen = levels ?? plan.levels;
    const repeats = number('--repeats', plan.repeats);
    // Given levels, or a given repeat count, apply to every level unless --repeat-up-to says otherwise.
    const everyLevel = levels !== undefined || given.has('--repeats') ? Math.max(...chosen.map((level) => level.concurrency)) : plan.repeatUpTo;
    const repeatUpTo = number('--repeat-up-to', everyLevel);
    return {
      ...plan,
      levels: chosen,
      repeats,
      repeatUpTo,
      maxTokens: number('--max-tokens', plan.maxTokens),
      parallelSequences: number('--sequences', plan.parallelSequences),
      threads: number('--threads', plan.threads),
      engineCpus: engineCpus ?? plan.engineCpus,
    };
  };
  // Bad values fail now, not after the other phases ran.
  if (given.size > 0)
    apply({ parallelSequences: 1, threads: 1, contextSize: 1, maxTokens: 1, levels: [{ concurrency: 1, requests: 1 }], repeatUpTo: 1, repeats: 1 });
  return { apply, rest };
}
