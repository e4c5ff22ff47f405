import { DriverClient } from '../driver-client';
import type { EngineSpec } from '../../common/driver-protocol';
import type { InspectorClient, MemoryUsage } from '../inspector-client';
import type { OpenStreamsPlan } from '../bench-options';
import type { OpenStreamsLevel } from '../results-model';
import { startServiceStack } from '../../common/service-stack';
import { round } from '../../common/stats';

/** File descriptors beyond one per stream that the API or the load generator need for themselves. */
const FD_MARGIN = 500;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

const snapshot = (memory: MemoryUsage): OpenStreamsLevel['apiBefore'] => ({
  rssBytes: memory.rss,
  heapUsedBytes: memory.heapUsed,
  externalBytes: memory.external,
});

/**
 * How many streams one API instance holds open, and what each costs it: the synthetic worker
 * sends each stream its first token at once and the next only minutes later, so every stream
 * stays open and idle (apart from the worker's heartbeats) while the API's memory (after a full
 * GC, read through its inspector) and its Redis connections are measured.
 */
export async function runOpenStreams(
  plan: OpenStreamsPlan,
  openFilesLimit: number,
): Promise<{ redisApiConnectionsIdle: number; levels: OpenStreamsLevel[]; skipped: string[] }> {
  const engine: EngineSpec = { kind: 'synthetic', tokens: 2, tokenIntervalMs: 600_000, slots: 20_000, contextSize: 4096 };
  // One process: its memory is read through its inspector, and memory per stream is per process.
  const stack = await startServiceStack('open-streams', engine, 1);
  const inspector = stack.inspector as InspectorClient;
  const load = await DriverClient.start('load-generator', 'http-load-driver.ts', stack.target);
  const levels: OpenStreamsLevel[] = [];
  const skipped: string[] = [];
  try {
    // Warm the code paths and pools once, so the first baseline is not missing what any stream needs.
    await load.hold({ streams: 50, openBatch: 50, maxTokens: 2, openTimeoutMs: 30_000 });
    await load.release();
    await sleep(1000);
    const redisApiConnectionsIdle = await stack.redisClients('api-');
    for (const streams of plan.levels) {
      if (streams + FD_MARGIN > openFilesLimit) {
        skipped.push(`${streams} streams: ulimit -n is ${openFilesLimit}; the API and the load generator each need one descriptor per stream`);
        console.log(`  ${skipped[skipped.length - 1]}`);
        continue;
      }
      const before = await inspector.memoryAfterGc();
      const held = await load.hold({ streams, openBatch: plan.openBatch, maxTokens: 2, openTimeoutMs: 60_000 });
      await sleep(1000);
      const during = await inspector.memoryAfterGc();
      const redisApiConnections = await stack.redisClients('api-');
      await load.release();
      const perStream = (key: keyof MemoryUsage): number => round((during[key] - before[key]) / Math.max(1, held.opened), 0);
      const level: OpenStreamsLevel = {
        streams,
        opened: held.opened,
        failed: held.failed,
        errorSamples: held.errorSamples,
        openSeconds: round(held.openMs / 1000, 2),
        ttftMs: { p50: round(held.ttftMs.p50), p95: round(held.ttftMs.p95), p99: round(held.ttftMs.p99) },
        apiBefore: snapshot(before),
        apiWhileOpen: snapshot(during),
        perStreamBytes: { rss: perStream('rss'), heapUsed: perStream('heapUsed'), external: perStream('external') },
        redisApiConnections,
      };
      levels.push(level);
      console.log(
        `  ${streams} streams: ${held.opened} open (${held.failed} failed) in ${level.openSeconds} s, ` +
          `per stream rss ${round(level.perStreamBytes.rss / 1024, 1)} KB heap ${round(level.perStreamBytes.heapUsed / 1024, 1)} KB, ` +
          `redis api-* connections ${redisApiConnections}${held.errorSamples[0] ? `; ${held.errorSamples[0]}` : ''}`,
      );
      // Let the API cancel the released streams' jobs before the next baseline.
      await sleep(Math.min(10_000, 1000 + streams / 2));
    }
    return { redisApiConnectionsIdle, levels, skipped };
  } finally {
    await load.close();
    await stack.stop();
  }
}
