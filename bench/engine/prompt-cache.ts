/**
 * `npm run bench:prompt-cache`: what the llama.cpp worker's prompt cache (PROMPT_CACHE) saves,
 * on the worker's own engine with the worker's settings, cache on against cache off, alternating:
 * - time to first output of requests that share a long system prompt, one at a time and four at
 *   a time (on four sequences), and the prompt tokens reported cached;
 * - tokens per second of short requests with no system prompt (the `npm run bench` llama shape),
 *   four at a time: what keeping prompts in the sequences costs when nothing is shared;
 * - time to first output of the later turns of four conversations side by side, with a
 *   `prompt_cache_breakpoint` on each turn's user message and without.
 * Writes bench/results/prompt-cache.json.
 *
 *   npm run bench:prompt-cache -- [--model models/tiny-chat.gguf] [--gpu false] [--rounds 3] [--requests 24] [--system-repeats 60] [--turns 6]
 */
import type { ChatMessage, PromptCachePolicy } from '@app/contracts';
import { LlamaCppEngine } from '@app/worker/engine';
import type { LlamaCppEngineOptions } from '@app/worker/engine';
import { mkdirSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { median, round } from '../common/stats';

const { values } = parseArgs({
  options: {
    model: { type: 'string', default: 'models/tiny-chat.gguf' },
    gpu: { type: 'string', default: 'false' },
    rounds: { type: 'string', default: '3' },
    requests: { type: 'string', default: '24' },
    'system-repeats': { type: 'string', default: '60' },
    turns: { type: 'string', default: '6' },
  },
});
const ROUNDS = Number(values.rounds);
const REQUESTS = Number(values.requests);
const SEQUENCES = 4;
const TURNS = Number(values.turns);
const SYSTEM = `You are a storyteller. ${'Every tale you tell is about a rabbit, a queen, a hatter and a garden party that never ends. '.repeat(Number(values['system-repeats']))}`;

interface Answer {
  text: string;
  firstOutputMs: number;
  promptTokens: number;
  cachedTokens: number;
  completionTokens: number;
}

async function ask(engine: LlamaCppEngine, messages: ChatMessage[], maxTokens: number, seed: number, promptCache?: PromptCachePolicy): Promise<Answer> {
  const startedAt = performance.now();
  let firstAt: number | undefined;
  const outcome = await engine.generate({
    messages,
    sampling: { temperature: 1, topP: 1, maxTokens, stop: [], frequencyPenalty: 0, presencePenalty: 0, seed },
    signal: new AbortController().signal,
    output: { write: () => (firstAt ??= performance.now()) },
    promptCache,
  });
  const { usage } = outcome;
  return {
    text: outcome.text,
    firstOutputMs: (firstAt ?? performance.now()) - startedAt,
    promptTokens: usage.prompt_tokens,
    cachedTokens: usage.prompt_tokens_details?.cached_tokens ?? 0,
    completionTokens: usage.completion_tokens,
  };
}

const withSystem = (index: number): ChatMessage[] => [
  { role: 'system', content: SYSTEM },
  { role: 'user', content: `Tell me tale number ${index}.` },
];
const withoutSystem = (index: number): ChatMessage[] => [{ role: 'user', content: `Tell me about the rabbit, ${index}.` }];

/** `requests` requests, `concurrency` at a time, each client sending its next when its last ends. */
async function closedLoop(
  engine: LlamaCppEngine,
  concurrency: number,
  messages: (index: number) => ChatMessage[],
  maxTokens: number,
): Promise<{ answers: Answer[]; seconds: number }> {
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

const turnOf = (conversation: number, turn: number): string =>
  `Conversation ${conversation}, turn ${turn}: ${'tell me more about the hatter, the hare and the dormouse at the tea table, '.repeat(8)}and why.`;

/**
 * SEQUENCES conversations side by side, TURNS turns each, every turn sending the whole
 * conversation so far (as chat clients do); the answers of the turns after the first. With
 * `breakpoints`, each turn marks the end of its user message as OpenAI's prompt_cache_breakpoint.
 */
async function conversations(engine: LlamaCppEngine, breakpoints: boolean): Promise<Answer[]> {
  const later: Answer[] = [];
  await Promise.all(
    Array.from({ length: SEQUENCES }, async (_, conversation) => {
      const messages: ChatMessage[] = [{ role: 'system', content: 'You are a storyteller.' }];
      for (let turn = 0; turn < TURNS; turn++) {
        const content = turnOf(conversation, turn);
        messages.push({ role: 'user', content });
        const promptCache = breakpoints ? { implicit: true, breakpoint: { message: messages.length - 1, offset: content.length } } : undefined;
        const answer = await ask(engine, messages, 32, conversation * TURNS + turn, promptCache);
        if (turn > 0) later.push(answer);
        messages.push({ role: 'assistant', content: answer.text });
      }
    }),
  );
  return later;
}

/** One level's answers: the median time to first output, and the median prompt tokens cached. */
const medians = (answers: Answer[]) => ({
  firstOutputMsMedian: round(median(answers.map((answer) => answer.firstOutputMs)), 2),
  cachedTokensMedian: median(answers.map((answer) => answer.cachedTokens)),
});

async function measure(promptCache: boolean) {
  const options: LlamaCppEngineOptions = {
    modelPath: values.model ?? '',
    parallelSequences: SEQUENCES,
    threads: 1,
    contextSize: 4096,
    gpu: values.gpu as LlamaCppEngineOptions['gpu'],
    promptCache,
  };
  const engine = await LlamaCppEngine.load(options);
  try {
    await ask(engine, withoutSystem(0), 8, 0); // warm-up
    const sharedOne = await closedLoop(engine, 1, withSystem, 16);
    const sharedFour = await closedLoop(engine, SEQUENCES, withSystem, 16);
    const plain = await closedLoop(engine, SEQUENCES, withoutSystem, 64);
    const tokens = plain.answers.reduce((sum, answer) => sum + answer.completionTokens, 0);
    const unmarkedTurns = await conversations(engine, false);
    const markedTurns = await conversations(engine, true);
    return {
      promptTokens: sharedOne.answers[0].promptTokens,
      sharedSystemPromptC1: medians(sharedOne.answers),
      sharedSystemPromptC4: medians(sharedFour.answers),
      noSystemPromptC4: { tokensPerSecond: Math.round(tokens / plain.seconds), firstOutputMsMedian: medians(plain.answers).firstOutputMsMedian },
      laterTurnsC4: {
        promptTokensMedian: median(markedTurns.map((answer) => answer.promptTokens)),
        withoutBreakpoints: medians(unmarkedTurns),
        withBreakpoints: medians(markedTurns),
      },
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
      laterTurnsC4FirstOutputMs: {
        withoutBreakpoints: median(mine.map((run) => run.laterTurnsC4.withoutBreakpoints.firstOutputMsMedian)),
        withBreakpoints: median(mine.map((run) => run.laterTurnsC4.withBreakpoints.firstOutputMsMedian)),
      },
      laterTurnsC4CachedTokens: {
        withoutBreakpoints: median(mine.map((run) => run.laterTurnsC4.withoutBreakpoints.cachedTokensMedian)),
        withBreakpoints: median(mine.map((run) => run.laterTurnsC4.withBreakpoints.cachedTokensMedian)),
      },
    };
  };
  const results = {
    model: values.model,
    gpu: values.gpu,
    sequences: SEQUENCES,
    threads: 1,
    requestsPerLevel: REQUESTS,
    promptTokens: runs[0].promptTokens,
    turns: TURNS,
    laterTurnPromptTokensMedian: runs[0].laterTurnsC4.promptTokensMedian,
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
