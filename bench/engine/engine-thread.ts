/**
 * `npm run bench:engine-thread`: what running llama.cpp on a thread of its own buys the worker.
 * The same engine and closed loop (`npm run bench`'s, with its warm-up: 4 sequences, 4 clients,
 * 64-token answers, greedy) run twice over: with the engine on the calling thread, as it ran in
 * the worker before, and on its own thread (ThreadedEngine), as it runs now. For each, the caller's thread spends a set time on
 * every output part it receives, standing in for what the worker does per part (publishing
 * events, BullMQ, metrics: about 0.1 ms per token in a profile of the 2-core benchmark). Writes
 * bench/results/engine-thread.json.
 *
 *   npm run bench:engine-thread -- [--model=models/tiny-chat.gguf] [--requests=160] [--work-us=0,100,200] [--gpu=false]
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { InferenceEngine, LlamaCppEngineOptions } from '@app/worker/engine';
import { LlamaCppEngine, ThreadedEngine } from '@app/worker/engine';
import { runClosedLoop } from '../common/closed-loop';
import { numberOption, optionValue } from '../common/command-line';
import type { GpuSetting, LoadPlan } from '../common/driver-protocol';
import { messagesFor, samplingFor } from '../common/workload';

const SEQUENCES = 4;
const MAX_TOKENS = 64;
const requests = numberOption('requests', 160);
const workUs = (optionValue('work-us') ?? '0,100,200').split(',').map(Number);
const options: Omit<LlamaCppEngineOptions, 'log'> = {
  modelPath: resolve(optionValue('model') ?? 'models/tiny-chat.gguf'),
  parallelSequences: SEQUENCES,
  threads: 1,
  contextSize: 4096,
  gpu: (optionValue('gpu') ?? 'false') as GpuSetting,
};

/** Keeps this thread busy for `us` microseconds, as the worker's own per-part work would. */
function work(us: number): void {
  const until = performance.now() + us / 1000;
  while (performance.now() < until);
}

/** The closed loop of `npm run bench`, SEQUENCES clients for SEQUENCES slots, each part costing the caller `partUs`. */
async function tokensPerSecond(engine: InferenceEngine, partUs: number): Promise<number> {
  const plan: LoadPlan = {
    concurrency: SEQUENCES,
    requests,
    warmupRequests: SEQUENCES * 4,
    warmupMaxTokens: MAX_TOKENS,
    durationMs: 600_000,
    hardStopMs: 900_000,
    stream: true,
    maxTokens: MAX_TOKENS,
    requestTimeoutMs: 60_000,
  };
  const result = await runClosedLoop(plan, async (index, meter, step, signal) => {
    const outcome = await engine.generate({
      messages: messagesFor(index),
      sampling: samplingFor(index, step.maxTokens),
      signal,
      output: {
        write: () => {
          meter.content();
          work(partUs);
        },
      },
    });
    return outcome.usage.completion_tokens;
  });
  if (result.errors > 0) throw new Error(`${result.errors} generations failed: ${result.errorSamples.join('; ')}`);
  return result.tokensPerSecond;
}

async function main(): Promise<void> {
  const engines: Record<'calling thread' | 'own thread', InferenceEngine> = {
    'calling thread': await LlamaCppEngine.load(options),
    'own thread': await ThreadedEngine.startLlama(options),
  };
  const rows: Array<{ workUsPerPart: number; engine: string; tokensPerSecond: number }> = [];
  for (const us of workUs) {
    // Alternating, so that a slower minute of a shared machine does not favour one side.
    for (const [name, engine] of Object.entries(engines)) {
      const measured = Math.round(await tokensPerSecond(engine, us));
      rows.push({ workUsPerPart: us, engine: name, tokensPerSecond: measured });
      console.log(`${String(us).padStart(4)} µs per part   ${name.padEnd(15)} ${measured} tokens/s`);
    }
  }
  await Promise.all(Object.values(engines).map((engine) => engine.close()));
  mkdirSync('bench/results', { recursive: true });
  const result = {
    date: new Date().toISOString(),
    model: optionValue('model') ?? 'models/tiny-chat.gguf',
    sequences: SEQUENCES,
    maxTokens: MAX_TOKENS,
    requests,
    rows,
  };
  writeFileSync('bench/results/engine-thread.json', `${JSON.stringify(result, null, 2)}\n`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
