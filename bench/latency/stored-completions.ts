/**
 * `npm run bench:stored -- [--runs=10]`
 *
 * What `store: true` costs and what resuming gives, on a private Redis, API and llama.cpp
 * worker (tiny model, 1 thread): for answers of 64, 256 and 1,024 tokens, streamed one at a
 * time, with and without `store: true`, it measures
 * - the stream's tokens/s both ways (the event log and the stored answer are extra Redis writes);
 * - the Redis memory (MEMORY USAGE) of a stored completion's record, answer and event log;
 * - the time from a resume request (Last-Event-ID after the role chunk, the completion already
 *   finished) to its first frame and to [DONE].
 * Results go to bench/results/stored-completions.json.
 */
import { Redis } from 'ioredis';
import { mkdir, writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { storedCompletionKeys } from '@app/contracts';
import { startRedisServer } from '../../tools/local-stack/redis-server';
import { REPO_ROOT, startApi, startWorker } from '../../tools/local-stack/services';
import { postChatCompletion } from '../../tools/local-stack/chat-request';
import { numberOption } from '../common/command-line';
import { summarize } from '../common/stats';

const RUNS = numberOption('runs', 10);
const MODEL = 'tiny-chat';
const KEY = 'sk-bench-stored-0123456789';
const LENGTHS = [64, 256, 1024];

interface StreamRun {
  id: string;
  ms: number;
  tokens: number;
}

/** Streams one answer over raw HTTP and reads it to [DONE]; tokens from the usage chunk. */
async function stream(baseUrl: string, maxTokens: number, seed: number, store: boolean): Promise<StreamRun> {
  const started = performance.now();
  const response = await postChatCompletion(baseUrl, KEY, {
    model: MODEL,
    messages: [{ role: 'user', content: 'Tell me a long story.' }],
    max_tokens: maxTokens,
    seed,
    stream: true,
    stream_options: { include_usage: true },
    store,
  });
  const text = await response.text();
  const ms = performance.now() - started;
  const chunks = text
    .split('\n\n')
    .map((frame) => /^data: (.*)$/m.exec(frame)?.[1])
    .filter((data): data is string => data !== undefined && data !== '[DONE]')
    .map((data) => JSON.parse(data) as { id: string; usage?: { completion_tokens: number } | null });
  return { id: chunks[0].id, ms, tokens: chunks.at(-1)?.usage?.completion_tokens ?? 0 };
}

/** Resumes a finished completion after its first frame: time to the first frame sent and to the end. */
async function resume(baseUrl: string, id: string): Promise<{ firstFrameMs: number; doneMs: number }> {
  const started = performance.now();
  const response = await fetch(`${baseUrl}/chat/completions/${id}?stream=true`, { headers: { authorization: `Bearer ${KEY}`, 'last-event-id': '0' } });
  if (!response.body) throw new Error(`resume answered ${response.status} without a body`);
  const reader: ReadableStreamDefaultReader<Uint8Array> = response.body.getReader();
  let firstFrameMs = 0;
  let text = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (firstFrameMs === 0) firstFrameMs = performance.now() - started;
    text += Buffer.from(value).toString();
  }
  if (!text.endsWith('data: [DONE]\n\n')) throw new Error(`resume did not end with [DONE]: ${text.slice(-200)}`);
  return { firstFrameMs, doneMs: performance.now() - started };
}

async function main(): Promise<void> {
  const redis = await startRedisServer({});
  const api = await startApi({ redisUrl: redis.url, apiKeys: [KEY], models: [MODEL] });
  const worker = await startWorker({
    redisUrl: redis.url,
    modelName: MODEL,
    modelPath: resolve(REPO_ROOT, `models/${MODEL}.gguf`),
    threads: 1,
    env: { GPU: 'false', HEALTH_PORT: '0' },
  });
  const client = new Redis(redis.url);
  try {
    const rows = [];
    for (const length of LENGTHS) {
      await stream(api.baseUrl, length, 0, false); // warm the worker's sequence
      const plain: StreamRun[] = [];
      const stored: StreamRun[] = [];
      for (let run = 0; run < RUNS; run++) {
        plain.push(await stream(api.baseUrl, length, run, false));
        stored.push(await stream(api.baseUrl, length, run, true));
      }
      const memory = await Promise.all(
        stored.map(async ({ id }) => {
          const keys = storedCompletionKeys(id);
          const [record, answer, log] = await Promise.all(
            [keys.record, keys.answer, keys.log].map((key) => client.call('MEMORY', 'USAGE', key) as Promise<number | null>),
          );
          const events = await client.xlen(keys.log);
          return { record: record ?? 0, answer: answer ?? 0, log: log ?? 0, events };
        }),
      );
      const resumes = [];
      for (const { id } of stored) resumes.push(await resume(api.baseUrl, id));
      const tokensPerSecond = (runs: StreamRun[]): number =>
        runs.reduce((sum, run) => sum + run.tokens, 0) / (runs.reduce((sum, run) => sum + run.ms, 0) / 1000);
      const mean = (values: number[]): number => Math.round(values.reduce((sum, value) => sum + value, 0) / values.length);
      rows.push({
        maxTokens: length,
        meanTokens: mean(stored.map((run) => run.tokens)),
        tokensPerSecond: { plain: Math.round(tokensPerSecond(plain)), stored: Math.round(tokensPerSecond(stored)) },
        storedShareOfPlain: Number((tokensPerSecond(stored) / tokensPerSecond(plain)).toFixed(3)),
        memoryBytes: {
          record: mean(memory.map((entry) => entry.record)),
          answer: mean(memory.map((entry) => entry.answer)),
          eventLog: mean(memory.map((entry) => entry.log)),
          eventsPerLog: mean(memory.map((entry) => entry.events)),
        },
        resumeMs: { firstFrame: summarize(resumes.map((entry) => entry.firstFrameMs)), done: summarize(resumes.map((entry) => entry.doneMs)) },
      });
      console.log(JSON.stringify(rows.at(-1)));
    }
    const out = resolve(REPO_ROOT, 'bench/results');
    await mkdir(out, { recursive: true });
    await writeFile(
      resolve(out, 'stored-completions.json'),
      `${JSON.stringify({ command: `npm run bench:stored -- --runs=${RUNS}`, runs: RUNS, at: new Date().toISOString(), rows }, null, 2)}\n`,
    );
  } finally {
    client.disconnect();
    await Promise.allSettled([api.process.stop('SIGTERM'), worker.stop('SIGTERM')]);
    await redis.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
