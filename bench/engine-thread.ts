/**
 * `npm run bench:engine-thread`: what running llama.cpp on a thread of its own buys the worker.
 * The same engine and closed loop (4 sequences, 4 clients, 64-token answers, greedy) run twice
 * over: with the engine on the calling thread, as it ran in the worker before, and on its own
 * thread (ThreadedEngine), as it runs now. For each, the caller's thread spends a set time on
 * every output part it receives, standing in for what the worker does per part (publishing
 * events, BullMQ, metrics: about 0.1 ms per token in a profile of the 2-core benchmark). Writes
 * bench/results/engine-thread.json.
 *
 *   npm run bench:engine-thread -- [--model=models/tiny-chat.gguf] [--requests=160] [--work-us=0,100,200] [--gpu=false]
 */
import type { GpuSetting } from './driver-protocol';
import { mkdirSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { InferenceEngine } from '../apps/worker/src/engine/inference-engine';
import { LlamaCppEngine } from '../apps/worker/src/engine/llama-cpp.engine';
import type { LlamaCppEngineOptions } from '../apps/worker/src/engine/llama-cpp.engine';
import { ThreadedEngine } from '../apps/worker/src/engine/thread/threaded-engine';
import { numberOption, optionValue } from './command-line';
import { messagesFor, samplingFor } from './workload';

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

/** Tokens per second of `count` requests, SEQUENCES at a time, each part costing the caller `partUs`. */
async function closedLoop(engine: InferenceEngine, count: number, partUs: number): Promise<number> {
  let next = 0;
  let tokens = 0;
  const startedAt = performance.now();
  const client = async (): Promise<void> => {
    while (next < count) {
      const index = next++;
      const outcome = await engine.generate({
        messages: messagesFor(index),
        sampling: samplingFor(index, MAX_TOKENS),
        signal: new AbortController().signal,
        output: { write: () => work(partUs) },
      });
      tokens += outcome.usage.completion_tokens;
    }
  };
  await Promise.all(Array.from({ length: SEQUENCES }, client));
  return tokens / ((performance.now() - startedAt) / 1000);
}

async function main(): Promise<void> {
  const engines: Record<'calling thread' | 'own thread', InferenceEngine> = {
    'calling thread': await LlamaCppEngine.load(options),
    'own thread': await ThreadedEngine.startLlama(options),
  };
  const rows: Array<{ workUsPerPart: number; engine: string; tokensPerSecond: number }> = [];
  for (const engine of Object.values(engines)) await closedLoop(engine, SEQUENCES * 4, 0); // warm-up
  for (const us of workUs) {
    // Alternating, so that a slower minute of a shared machine does not favour one side.
    for (const [name, engine] of Object.entries(engines)) {
      const tokensPerSecond = Math.round(await closedLoop(engine, requests, us));
      rows.push({ workUsPerPart: us, engine: name, tokensPerSecond });
      console.log(`${String(us).padStart(4)} µs per part   ${name.padEnd(15)} ${tokensPerSecond} tokens/s`);
    }
  }
  await Promise.all(Object.values(engines).map((engine) => engine.close()));
  mkdirSync('bench/results', { recursive: true });
  const result = { date: new Date().toISOString(), model: optionValue('model') ?? 'models/tiny-chat.gguf', sequences: SEQUENCES, maxTokens: MAX_TOKENS, requests, rows };
  writeFileSync('bench/results/engine-thread.json', `${JSON.stringify(result, null, 2)}\n`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
