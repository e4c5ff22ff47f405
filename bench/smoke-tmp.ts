import { DriverClient } from './driver-client';
import { startServiceStack } from './service-stack';
import { CpuMeter } from './process-stats';

async function main(): Promise<void> {
  const stack = await startServiceStack('smoke', { kind: 'synthetic', tokens: 64, tokenIntervalMs: 10, slots: 2000, contextSize: 4096 });
  try {
    const load = await DriverClient.start('load', 'http-load-driver.ts', stack.target);
    for (const concurrency of [1, 10, 100]) {
      const cpu = new CpuMeter({ ...stack.pids, load: load.pid });
      cpu.start();
      const r = await load.run({ concurrency, requests: concurrency * 5, warmupRequests: concurrency, stream: true, maxTokens: 64, requestTimeoutMs: 30000 });
      console.log(concurrency, JSON.stringify({ ok: r.ok, err: r.errors, es: r.errorSamples, ttft: r.ttftMs, itl: r.itlMs.p50, ev: r.deltaEventsPerSecond, tps: r.tokensPerSecond }), cpu.stop());
    }
    console.log('mem', await stack.inspector.memoryAfterGc(), 'redis api clients', await stack.redisClients('api-'));
    await load.close();
  } finally {
    await stack.stop();
  }
}
void main();
