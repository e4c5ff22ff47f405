/**
 * The engine alone: a child process that loads the worker's own engine class in-process, with
 * the options the worker would give it, and runs the same closed loop as the load generator.
 * Requests beyond the engine's slots wait their turn in order, as jobs wait in the queue, and
 * their time to first token counts from when they were issued.
 */
import { keepEngineOnCpus, LlamaCppEngine, SyntheticEngine } from '@app/worker/engine';
import type { InferenceEngine } from '@app/worker/engine';
import { runClosedLoop } from '../common/closed-loop';
import type { EngineSpec, LoadPlan, LoadResult } from '../common/driver-protocol';
import { serveDriver } from './driver-host';
import { messagesFor, samplingFor } from '../common/workload';

/** First come, first served slots. */
class Slots {
  private readonly waiting: Array<() => void> = [];

  constructor(private free: number) {}

  /** Resolves with a slot, or false when `signal` aborted first (then no slot is held). */
  async acquire(signal: AbortSignal): Promise<boolean> {
    if (this.free > 0) {
      this.free -= 1;
      return true;
    }
    if (signal.aborted) return false;
    return new Promise<boolean>((resolve) => {
      const take = (): void => {
        signal.removeEventListener('abort', give);
        resolve(true);
      };
      const give = (): void => {
        this.waiting.splice(this.waiting.indexOf(take), 1);
        resolve(false);
      };
      this.waiting.push(take);
      signal.addEventListener('abort', give, { once: true });
    });
  }

  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.free += 1;
  }
}

/** The engine on the same backend the service's worker gets (its GPU variable, where `false` is the CPU). */
async function loadEngine(spec: EngineSpec): Promise<InferenceEngine> {
  if (spec.kind === 'synthetic') return new SyntheticEngine(spec);
  const log = (message: string): void => console.log(`engine alone: ${message}`);
  const engine = await LlamaCppEngine.load({ ...spec, gpu: spec.gpu ?? 'false', log });
  // In-process, the engine's JavaScript runs on the main thread: all of this process is the engine's
  // but V8's helpers, which keepEngineOnCpus puts off the engine's CPUs here as in the worker.
  if (spec.engineCpus) log(await keepEngineOnCpus({ cpus: spec.engineCpus, threads: spec.threads, mainThreadElsewhere: false }));
  return engine;
}

async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2] ?? '') as EngineSpec;
  const engine = await loadEngine(spec);
  const slots = new Slots(engine.slots);

  const run = (plan: LoadPlan): Promise<LoadResult> =>
    runClosedLoop(plan, async (index, meter, step, signal) => {
      if (!(await slots.acquire(signal))) throw new Error('abandoned while waiting for a slot');
      try {
        const outcome = await engine.generate({
          messages: messagesFor(index),
          sampling: samplingFor(index, step.maxTokens),
          signal,
          output: { write: () => meter.content() },
        });
        return outcome.usage.completion_tokens;
      } finally {
        slots.release();
      }
    });

  serveDriver({ run, close: () => engine.close() });
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
