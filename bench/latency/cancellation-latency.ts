/**
 * `npm run bench:cancel`: how fast a client's disconnect frees the GPU. Each round streams a
 * long greedy answer from the real llama.cpp worker, disconnects after the first text, and
 * measures disconnect → the job's end as the worker recorded it (BullMQ `finishedOn`, written
 * after the generation stopped). Writes bench/results/cancellation.json.
 */
import { completionQueueName, completionQueuePrefix } from '@app/contracts';
import { Queue } from 'bullmq';
import { mkdirSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { startRedisServer } from '../../tools/local-stack/redis-server';
import { REPO_ROOT, startApi, startWorker } from '../../tools/local-stack/services';
import { postChatCompletion } from '../../tools/local-stack/chat-request';
import { numberOption } from '../common/command-line';
import { summarize } from '../common/stats';

const ROUNDS = numberOption('rounds', 100);
const MODEL = 'tiny-chat';
const KEY = 'sk-bench-cancel-0123456789';

async function firstTextThenDisconnect(baseUrl: string): Promise<{ id: string; disconnectedAt: number }> {
  const client = new AbortController();
  const body = { model: MODEL, stream: true, temperature: 0, max_tokens: 4000, messages: [{ role: 'user', content: 'Go on.' }] };
  const response = await postChatCompletion(baseUrl, KEY, body, client.signal);
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value } = await reader.read();
    buffer += decoder.decode(value, { stream: true });
    const match = /"id":"(chatcmpl-[^"]+)".*"content":"[^"]+"/.exec(buffer);
    if (match) {
      const disconnectedAt = Date.now();
      client.abort();
      return { id: match[1], disconnectedAt };
    }
  }
}

async function main(): Promise<void> {
  const redis = await startRedisServer();
  const worker = await startWorker({
    redisUrl: redis.url,
    modelName: MODEL,
    modelPath: resolve(REPO_ROOT, 'models/tiny-chat.gguf'),
    parallelSequences: 2,
    threads: 1,
    env: { GPU: 'false', HEALTH_PORT: '0' },
  });
  const api = await startApi({ redisUrl: redis.url, apiKeys: [KEY], models: [MODEL] });
  const queue = new Queue(completionQueueName(MODEL), { connection: { url: redis.url }, prefix: completionQueuePrefix(MODEL) });
  const latencies: number[] = [];
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const { id, disconnectedAt } = await firstTextThenDisconnect(api.baseUrl);
      for (;;) {
        const job = await queue.getJob(id);
        if (job?.finishedOn) {
          if (!/cancelled/.test(job.failedReason ?? '')) throw new Error(`job ${id} ended without being cancelled: ${job.failedReason}`);
          latencies.push(job.finishedOn - disconnectedAt);
          break;
        }
        await new Promise((resolve_) => setTimeout(resolve_, 5));
      }
    }
  } finally {
    await queue.close();
    await Promise.all([api.process.stop(), worker.stop()]);
    await redis.stop();
  }
  const summary = summarize(latencies);
  const result = { measured: new Date().toISOString(), rounds: ROUNDS, disconnectToGenerationStoppedMs: summary, bar: { p99Ms: 250 } };
  mkdirSync(resolve(REPO_ROOT, 'bench/results'), { recursive: true });
  writeFileSync(resolve(REPO_ROOT, 'bench/results/cancellation.json'), `${JSON.stringify(result, null, 2)}\n`);
  console.log(`disconnect → generation stopped over ${ROUNDS} rounds (ms): p50 ${summary.p50}, p95 ${summary.p95}, p99 ${summary.p99}, max ${summary.max}`);
}

void main();
