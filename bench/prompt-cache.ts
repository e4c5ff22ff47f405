/**
 * `npm run bench:prompt-cache`: what the llama.cpp worker's prompt cache (PROMPT_CACHE) saves,
 * on the worker's own engine with the worker's settings, cache on against cache off, alternating:
 * - time to first output of requests that share a long system prompt, one at a time and four at
 *   a time (on four sequences), and the prompt tokens reported cached;
 * - tokens per second of short requests with no system prompt (the `npm run bench` llama shape),
 *   four at a time: what keeping prompts in the sequences costs when nothing is shared.
 * Writes bench/results/prompt-cache.json.
 *
 *   npm run bench:prompt-cache -- [--model models/tiny-chat.gguf] [--gpu false] [--rounds 3] [--requests 24] [--system-repeats 60]
 */
import type { ChatMessage } from '@app/contracts';
import { LlamaCppEngine } from '../apps/worker/src/engine/llama-cpp.engine';
import type { LlamaCppEngineOptions } from '../apps/worker/src/engine/llama-cpp.engine';
import { mkdirSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { median, round } from './stats';

const { values } = parseArgs({
  options: {
    model: { type: 'string', default: 'models/tiny-chat.gguf' },
    gpu: { type: 'string', default: 'false' },
    rounds: { type: 'string', default: '3' },
    requests: { type: 'string', default: '24' },
    'system-repeats': { type: 'string', default: '60' },
  },
});
const ROUNDS = Number(values.rounds);
const REQUESTS = Number(values.requests);
const SEQUENCES = 4;
const SYSTEM = `You are a storyteller. ${'Every tale you tell is about a rabbit, a queen, a hatter and a garden party that never ends. '.repeat(Number(values['system-repeats']))}`;

interface Answer {
  firstOutputMs: number;
  promptTokens: number;
  cachedTokens: number;
  completionTokens: number;
}

async function ask(engine: LlamaCppEngine, messages: ChatMessage[], maxTokens: number, seed: number): Promise<Answer> {
  const startedAt = performance.now();
  let firstAt: number | undefined;
  const outcome = await engine.generate({
    messages,
    sampling: { temperature: 1, topP: 1, maxTokens, stop: [], frequencyPenalty: 0, presencePenalty: 0, seed },
    signal: new AbortController().signal,
    output: { write: () => (firstAt ??= performance.now()) },
  });
  const { usage } = outcome;
  return { firstOutputMs: (firstAt ?? performance.now()) - startedAt, promptTokens: usage.prompt_tokens, cachedTokens: usage.prompt_tokens_details?.cached_tokens ?? 0, completionTokens: usage.completion_tokens };
}

const withSystem = (index: number): ChatMessage[] => [
  { role: 'system', content: SYSTEM },
  { role: 'user', content: `Tell me tale number ${index}.` },
];
const withoutSystem = (index: number): ChatMessage[] => [{ role: 'user', content: `Tell me about the rabbit, ${index}.` }];

/** `requests` requests, `concurrency` at a time, each client sending its next when its last ends. */
async function closedLoop(engine: LlamaCppEngine, concurrency: number, messages: (index: number) => ChatMessage[], maxTokens: number): Promise<{ answers: Answer[]; seconds: number }> {
  const answers: Answer[] = [];
  let next = 0;
  const startedAt = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < REQUESTS) {
        const index = next++;
        answers.push(await ask(engine, messages(index), maxTokens, index));
      }
    }),
  );
  return { answers, seconds: (performance.now() - startedAt) / 1000 };
}

/** One level's answers: the median time to first output, and the median prompt tokens cached. */
const medians = (answers: Answer[]) => ({
  firstOutputMsMedian: round(median(answers.map((answer) => answer.firstOutputMs)), 2),
  cachedTokensMedian: median(answers.map((answer) => answer.cachedTokens)),
});

async function measure(promptCache: boolean) {
  const options: LlamaCppEngineOptions = { modelPath: values.model ?? '', parallelSequences: SEQUENCES, threads: 1, contextSize: 4096, gpu: values.gpu as LlamaCppEngineOptions['gpu'], promptCache };
  const engine = await LlamaCppEngine.load(options);
  try {
    await ask(engine, withoutSystem(0), 8, 0); // warm-up
    const sharedOne = await closedLoop(engine, 1, withSystem, 16);
    const sharedFour = await closedLoop(engine, SEQUENCES, withSystem, 16);
    const plain = await closedLoop(engine, SEQUENCES, withoutSystem, 64);
    const tokens = plain.answers.reduce((sum, answer) => sum + answer.completionTokens, 0);
    return {
      promptTokens: sharedOne.answers[0].promptTokens,
      sharedSystemPromptC1: medians(sharedOne.answers),
      sharedSystemPromptC4: medians(sharedFour.answers),
      noSystemPromptC4: { tokensPerSecond: Math.round(tokens / plain.seconds), firstOutputMsMedian: medians(plain.answers).firstOutputMsMedian },
    };
  } finally {
    await engine.close();
  }
}

async function main(): Promise<void> {
  const runs: Array<{ promptCache: boolean } & Awaited<ReturnType<typeof measure>>> = [];
  for (let round = 1; round <= ROUNDS; round++) {
    // Alternating which goes first: the machine's state drifts during a run.
    for (const promptCache of round % 2 === 1 ? [true, false] : [false, true]) {
      const run = { promptCache, ...(await measure(promptCache)) };
      console.log(JSON.stringify(run));
      runs.push(run);
    }
  }
  const summary = (promptCache: boolean) => {
    const mine = runs.filter((run) => run.promptCache === promptCache);
    return {
      sharedSystemPromptC1FirstOutputMs: median(mine.map((run) => run.sharedSystemPromptC1.firstOutputMsMedian)),
      sharedSystemPromptC4FirstOutputMs: median(mine.map((run) => run.sharedSystemPromptC4.firstOutputMsMedian)),
      cachedTokensC1: median(mine.map((run) => run.sharedSystemPromptC1.cachedTokensMedian)),
      noSystemPromptC4TokensPerSecond: median(mine.map((run) => run.noSystemPromptC4.tokensPerSecond)),
    };
  };
  const results = {
    model: values.model,
    gpu: values.gpu,
    sequences: SEQUENCES,
    threads: 1,
    requestsPerLevel: REQUESTS,
    promptTokens: runs[0].promptTokens,
    medianOfRounds: { cacheOn: summary(true), cacheOff: summary(false) },
    runs,
    measuredAt: new Date().toISOString(),
  };
  mkdirSync('bench/results', { recursive: true });
  writeFileSync('bench/results/prompt-cache.json', `${JSON.stringify(results, null, 2)}\n`);
  console.log(JSON.stringify(results.medianOfRounds, null, 2));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
