/**
 * `npm run bench:agents`: agent conversations against 3 llama.cpp workers through the whole
 * service, prefix-cache affinity off and then on (a fresh Redis, API and workers for each). Each
 * conversation has a system prompt of its own (an agent's instructions and project, about 2,000
 * tokens), tools, and a history that grows every turn (a tool result and the answer); its turns go
 * one after another, the conversations side by side, each turn after a pause for the agent's tool
 * to run (uniform over 0–2× `think-ms`, seeded per conversation), so that conversations do not move
 * in lockstep (in lockstep, the shared queue keeps handing a conversation to the same worker by
 * chance, and affinity off looks better than it is). Reports per turn the prompt tokens evaluated
 * (prompt minus cached), the share served from cache, and time to first token p50/p99 (streamed,
 * as a client sees it). Writes bench/results/agents.json.
 *
 *   npm run bench:agents -- [--conversations 24] [--turns 8] [--workers 3] [--sequences 8] [--system-repeats 45] [--max-tokens 24]
 *     [--think-ms 500]
 *     [--model tiny-chat]   # a GGUF under models/, e.g. llama-50m-f16 (a real shape): writes agents-<model>.json
 */
import OpenAI from 'openai';
import { mkdirSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { ManagedProcess } from '../../tools/local-stack/managed-process';
import { startRedisServer } from '../../tools/local-stack/redis-server';
import { REPO_ROOT, startApi, startWorker } from '../../tools/local-stack/services';
import { stopEverythingOnSignals } from '../common/cleanup';
import { round, summarize } from '../common/stats';
import { mulberry32 } from '../common/seeded-random';

const { values } = parseArgs({
  options: {
    conversations: { type: 'string', default: '24' },
    turns: { type: 'string', default: '8' },
    workers: { type: 'string', default: '3' },
    sequences: { type: 'string', default: '8' },
    'system-repeats': { type: 'string', default: '45' },
    'max-tokens': { type: 'string', default: '24' },
    'think-ms': { type: 'string', default: '500' },
    model: { type: 'string', default: 'tiny-chat' },
  },
});
const CONVERSATIONS = Number(values.conversations);
const TURNS = Number(values.turns);
const WORKERS = Number(values.workers);
const SEQUENCES = Number(values.sequences);
const MAX_TOKENS = Number(values['max-tokens']);
const MODEL = values.model;
const THINK_MS = Number(values['think-ms']);
const KEY = 'sk-bench-agents-0123456789';
const LOGS = resolve(REPO_ROOT, 'test-artifacts/bench/logs');

const TOOLS: OpenAI.ChatCompletionTool[] = ['read_file', 'write_file', 'run_tests', 'search_code'].map((name) => ({
  type: 'function',
  function: {
    name,
    description: `The ${name.replace('_', ' ')} tool of the agent: it takes a path and a query and answers with what it found in the garden of the queen.`,
    parameters: { type: 'object', properties: { path: { type: 'string' }, query: { type: 'string' } }, required: ['path'] },
  },
}));

const systemPrompt = (conversation: number): string =>
  `You are agent number ${conversation}, working on project ${conversation}. ${`The rabbit, the queen and the hatter of project ${conversation} keep a garden party that never ends. `.repeat(Number(values['system-repeats']))}`;
const toolResult = (conversation: number, turn: number): string =>
  `Tool result ${turn} for agent ${conversation}: ${'the hatter poured the tea and the dormouse slept in the teapot while the queen shouted. '.repeat(6)}`;

/** Turns that ended in an error (on an overloaded machine a worker can fall silent mid-answer) and were asked again. */
let retriedTurns = 0;

interface TurnSample {
  turn: number;
  promptTokens: number;
  cachedTokens: number;
  ttftMs: number;
}

async function streamTurn(client: OpenAI, messages: OpenAI.ChatCompletionMessageParam[], turn: number): Promise<{ sample: TurnSample; text: string }> {
  const startedAt = performance.now();
  let firstAt: number | undefined;
  let text = '';
  let usage: OpenAI.CompletionUsage | undefined;
  const stream = await client.chat.completions.create({
    model: MODEL,
    messages,
    tools: TOOLS,
    tool_choice: 'none',
    max_tokens: MAX_TOKENS,
    temperature: 0,
    stream: true,
    stream_options: { include_usage: true },
  });
  for await (const chunk of stream) {
    const delta = chunk.choices[0]?.delta.content;
    if (delta) {
      firstAt ??= performance.now();
      text += delta;
    }
    if (chunk.usage) usage = chunk.usage;
  }
  if (!usage) throw new Error('no usage in the stream');
  return {
    sample: {
      turn,
      promptTokens: usage.prompt_tokens,
      cachedTokens: usage.prompt_tokens_details?.cached_tokens ?? 0,
      ttftMs: (firstAt ?? performance.now()) - startedAt,
    },
    text,
  };
}

async function conversation(client: OpenAI, index: number): Promise<TurnSample[]> {
  const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'system', content: systemPrompt(index) }];
  const samples: TurnSample[] = [];
  const random = mulberry32(1000 + index);
  for (let turn = 1; turn <= TURNS; turn++) {
    await new Promise((resolve) => setTimeout(resolve, random() * 2 * THINK_MS));
    messages.push({ role: 'user', content: toolResult(index, turn) });
    for (let attempt = 1; ; attempt++) {
      try {
        const { sample, text } = await streamTurn(client, messages, turn);
        samples.push(sample);
        messages.push({ role: 'assistant', content: text });
        break;
      } catch (error) {
        if (attempt === 3) throw error;
        retriedTurns++;
      }
    }
  }
  return samples;
}

async function run(affinity: boolean) {
  const label = `agents-affinity-${affinity ? 'on' : 'off'}`;
  const redis = await startRedisServer({ logFile: resolve(LOGS, `${label}-redis.log`) });
  const workers: ManagedProcess[] = [];
  try {
    for (let index = 1; index <= WORKERS; index++) {
      workers.push(
        await startWorker({
          redisUrl: redis.url,
          modelName: MODEL,
          modelPath: resolve(REPO_ROOT, `models/${MODEL}.gguf`),
          workerId: `${label}-${index}`,
          parallelSequences: SEQUENCES,
          threads: 1,
          env: { GPU: 'false', HEALTH_PORT: '0', CONTEXT_SIZE: '8192' },
          logFile: resolve(LOGS, `${label}-worker-${index}.log`),
        }),
      );
    }
    const api = await startApi({
      redisUrl: redis.url,
      apiKeys: [KEY],
      models: [MODEL],
      env: { AFFINITY: String(affinity), MAX_QUEUE_WAIT_MS: '600000' },
      logFile: resolve(LOGS, `${label}-api.log`),
    });
    try {
      const client = new OpenAI({ baseURL: api.baseUrl, apiKey: KEY, maxRetries: 0, timeout: 600_000 });
      retriedTurns = 0;
      const startedAt = performance.now();
      const all = (await Promise.all(Array.from({ length: CONVERSATIONS }, (_, index) => conversation(client, index)))).flat();
      const seconds = (performance.now() - startedAt) / 1000;
      const perTurn = Array.from({ length: TURNS }, (_, index) => {
        const samples = all.filter(({ turn }) => turn === index + 1);
        const prompt = samples.reduce((sum, sample) => sum + sample.promptTokens, 0);
        const cached = samples.reduce((sum, sample) => sum + sample.cachedTokens, 0);
        const ttft = summarize(samples.map(({ ttftMs }) => ttftMs));
        return {
          turn: index + 1,
          promptTokens: prompt,
          evaluatedTokens: prompt - cached,
          cachedShare: round(cached / prompt, 3),
          ttftP50Ms: round(ttft.p50, 1),
          ttftP99Ms: round(ttft.p99, 1),
        };
      });
      const later = all.filter(({ turn }) => turn >= 2);
      const laterPrompt = later.reduce((sum, sample) => sum + sample.promptTokens, 0);
      const laterCached = later.reduce((sum, sample) => sum + sample.cachedTokens, 0);
      return {
        affinity,
        seconds: round(seconds, 1),
        retriedTurns,
        evaluatedTokens: all.reduce((sum, s) => sum + s.promptTokens - s.cachedTokens, 0),
        cachedShareFromTurn2: round(laterCached / laterPrompt, 3),
        perTurn,
      };
    } finally {
      await api.process.stop('SIGTERM', 5000);
    }
  } finally {
    await Promise.all(workers.map((worker) => worker.stop('SIGTERM', 5000)));
    await redis.stop();
  }
}

async function main(): Promise<void> {
  stopEverythingOnSignals();
  const off = await run(false);
  const on = await run(true);
  const result = {
    conversations: CONVERSATIONS,
    turns: TURNS,
    workers: WORKERS,
    sequencesPerWorker: SEQUENCES,
    maxTokens: MAX_TOKENS,
    thinkMs: THINK_MS,
    model: MODEL,
    off,
    on,
  };
  mkdirSync(resolve(REPO_ROOT, 'bench/results'), { recursive: true });
  writeFileSync(resolve(REPO_ROOT, `bench/results/${MODEL === 'tiny-chat' ? 'agents' : `agents-${MODEL}`}.json`), `${JSON.stringify(result, null, 2)}\n`);
  for (const { affinity, seconds, retriedTurns: retried, evaluatedTokens, cachedShareFromTurn2, perTurn } of [off, on]) {
    console.log(
      `affinity ${affinity ? 'on ' : 'off'}: ${seconds} s, ${evaluatedTokens} prompt tokens evaluated, cached share from turn 2: ${cachedShareFromTurn2}, turns asked again after an error: ${retried}`,
    );
    console.table(perTurn);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
