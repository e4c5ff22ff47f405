import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { DriverClient } from './driver-client';
import { startServiceStack } from './service-stack';

async function main(): Promise<void> {
  const stack = await startServiceStack('smoke', { kind: 'synthetic', tokens: 64, tokenIntervalMs: 10, slots: 2000, contextSize: 4096 });
  try {
    const load = await DriverClient.start('load', 'http-load-driver.ts', stack.target);
    const queue = new Queue('completions-tiny-chat', { connection: new Redis(stack.redisUrl, { maxRetriesPerRequest: null }), prefix: 'llm' });
    for (const concurrency of [1, 100]) {
      const r = await load.run({ concurrency, requests: concurrency * 5, warmupRequests: concurrency, stream: true, maxTokens: 64, requestTimeoutMs: 30000 });
      console.log(concurrency, r.ttftMs.p50);
      const jobs = await queue.getJobs(['completed'], 0, 200);
      const waits = jobs.map((j) => (j.processedOn ?? 0) - j.timestamp).sort((a, b) => a - b);
      const accepts = jobs.map((j) => j.timestamp - (j.data as { acceptedAt: number }).acceptedAt).sort((a, b) => a - b);
      console.log('queue wait p50', waits[waits.length >> 1], 'max', waits[waits.length - 1], 'accept->add p50', accepts[accepts.length >> 1]);
      await queue.clean(0, 10000, 'completed');
    }
    await load.close();
    await queue.close();
  } finally {
    await stack.stop();
  }
}
void main();
