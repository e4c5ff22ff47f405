/**
 * `npm run bench:upstream`: what share of a fast upstream's tokens per second the service keeps
 * when it relays them (`ENGINE=openai`), and what relaying costs in CPU. The upstream is
 * bench/common/fast-upstream-server.ts in a process of its own, streaming 100 tokens/s per stream
 * with one timer for all streams. At each level (32, 128, 512 streams by default) the same wave
 * of streamed chat completions (all sent at once, `--tokens` each) goes straight to the upstream
 * and through the service (Redis, one worker with UPSTREAM_MAX_CONCURRENCY above the level, one
 * API process), alternating which goes first, `--pairs` times; the rounds of each way are pooled.
 * Reported per level: tokens/s both ways and their ratio, time to first token p50/p99 both ways
 * and what the service adds, and the CPU seconds per 1,000 relayed tokens of the API, the worker,
 * Redis and the upstream. Then cancellation: one stream through the service is abandoned
 * mid-answer, `--cancels` times, and the upstream records when it saw its connection close.
 *
 * Everything runs on 127.0.0.1 and on this machine's cores, the load generator too: on a small
 * machine the service's processes and the client share them. Options: --levels=32,128,512
 * --tokens=200 --pairs=3 --cancels=10. Writes bench/results/upstream-relay.json.
 */
import { completionQueueName, completionQueuePrefix, workerQueueName } from '@app/contracts';
import { Queue } from 'bullmq';
import { writeFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { resolve } from 'node:path';
import { ManagedProcess } from '../../tools/local-stack/managed-process';
import { REPO_ROOT } from '../../tools/local-stack/services';
import { stopEverythingOnSignals } from '../common/cleanup';
import { RequestMeter } from '../common/closed-loop';
import { numberOption, optionValue } from '../common/command-line';
import type { HttpTarget } from '../common/driver-protocol';
import { streamCompletion, workloadRequests } from '../common/http-request';
import { describeMachine } from '../common/machine';
import { ARTIFACTS_DIR, BENCH_MODEL, startServiceStack } from '../common/service-stack';
import { round, roundSummary, summarize } from '../common/stats';
import { treeCpuSeconds } from '../service/process-stats';

const LEVELS = (optionValue('levels') ?? '32,128,512').split(',').map(Number);
const TOKENS = numberOption('tokens', 200);
const PAIRS = numberOption('pairs', 3);
const CANCELS = numberOption('cancels', 10);
const TOKENS_PER_SECOND = 100;
const REQUEST_TIMEOUT_MS = 120_000;
const WAYS = ['direct', 'service'] as const;
type Way = (typeof WAYS)[number];

const epochMs = (): number => performance.timeOrigin + performance.now();
const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));

/** One wave's numbers: tokens received, its wall time, each stream's time to first token, and when it was sent (epoch ms). */
interface Wave {
  tokens: number;
  seconds: number;
  ttftMs: number[];
  sentAt: number;
}

/** One wave: `streams` streams sent at once. */
async function wave(target: HttpTarget, streams: number, agent: Agent): Promise<Wave> {
  const request = workloadRequests(target);
  const sentAt = epochMs();
  const startedAt = performance.now();
  const results = await Promise.all(
    Array.from({ length: streams }, async (_, index) => {
      const meter = new RequestMeter();
      const tokens = await streamCompletion(request(index, { maxTokens: TOKENS, stream: true, agent, timeoutMs: REQUEST_TIMEOUT_MS }), meter);
      return { tokens, ttft: meter.firstContentAt - meter.startedAt };
    }),
  );
  return {
    tokens: results.reduce((sum, { tokens }) => sum + tokens, 0),
    seconds: (performance.now() - startedAt) / 1000,
    ttftMs: results.map(({ ttft }) => ttft),
    sentAt,
  };
}

/** Where a service wave's first tokens waited: its jobs' times in the queue (BullMQ's), from the wave's sending (one clock). */
async function queueStages(queues: Queue[], since: number): Promise<{ queuedMs: number[]; activeMs: number[] }> {
  const found = await Promise.all(queues.map((queue) => queue.getJobs(['completed'], 0, 2000)));
  const jobs = found.flat().filter((job) => job.timestamp >= since);
  return { queuedMs: jobs.map((job) => job.timestamp - since), activeMs: jobs.map((job) => (job.processedOn ?? job.timestamp) - since) };
}

async function main(): Promise<void> {
  stopEverythingOnSignals();
  const upstream = new ManagedProcess({
    name: 'fast-upstream',
    command: process.execPath,
    args: ['--import', 'tsx', resolve(REPO_ROOT, 'bench/common/fast-upstream-server.ts')],
    env: { ...process.env, FAST_UPSTREAM_PORT: '0', FAST_UPSTREAM_TOKENS_PER_SECOND: String(TOKENS_PER_SECOND) },
    logFile: resolve(ARTIFACTS_DIR, 'logs', 'fast-upstream.log'),
  });
  const port = (await upstream.waitForOutput(/listening on (\d+)/, 30_000))[1];
  const upstreamUrl = `http://127.0.0.1:${port}`;
  const maxLevel = Math.max(...LEVELS);
  const stack = await startServiceStack('upstream-relay', { kind: 'openai', baseUrl: `${upstreamUrl}/v1`, maxConcurrency: maxLevel + 16, contextSize: 8192 });
  const targets: Record<Way, HttpTarget> = { direct: { baseUrl: `${upstreamUrl}/v1`, apiKey: 'none', model: 'fast' }, service: stack.target };
  const agent = new Agent({ keepAlive: true, maxSockets: Infinity });
  // The model's queue and the worker's own (prefix-cache affinity places jobs there).
  const jobs = [completionQueueName(BENCH_MODEL), workerQueueName(BENCH_MODEL, 'bench-upstream-relay')].map(
    (name) => new Queue(name, { connection: { url: stack.redisUrl }, prefix: completionQueuePrefix(BENCH_MODEL) }),
  );
  const processes = { api: stack.pids.api, worker: stack.pids.worker, redis: stack.pids.redis, upstream: upstream.pid ?? 0 };
  const cpuNow = (): Record<string, number> => Object.fromEntries(Object.entries(processes).map(([name, pid]) => [name, treeCpuSeconds(pid)]));

  try {
    // Warm-up: connections, the worker's upstream pool, the API's code paths.
    for (const way of WAYS) await wave(targets[way], Math.min(32, maxLevel), agent);
    const levels = [];
    for (const streams of LEVELS) {
      const pooled = { direct: { tokens: 0, seconds: 0, ttft: [] as number[] }, service: { tokens: 0, seconds: 0, ttft: [] as number[] } };
      const stages = { queuedMs: [] as number[], activeMs: [] as number[] };
      const cpu: Record<string, number> = { api: 0, worker: 0, redis: 0, upstream: 0 };
      for (let pair = 0; pair < PAIRS; pair++) {
        for (const way of pair % 2 === 0 ? WAYS : [...WAYS].reverse()) {
          const before = cpuNow();
          const result = await wave(targets[way], streams, agent);
          const after = cpuNow();
          if (way === 'service') {
            for (const name of Object.keys(cpu)) cpu[name] += after[name] - before[name];
            const { queuedMs, activeMs } = await queueStages(jobs, result.sentAt);
            stages.queuedMs.push(...queuedMs);
            stages.activeMs.push(...activeMs);
          }
          pooled[way].tokens += result.tokens;
          pooled[way].seconds += result.seconds;
          pooled[way].ttft.push(...result.ttftMs);
          await sleep(200);
        }
      }
      const tokensPerSecond = (way: Way): number => round(pooled[way].tokens / pooled[way].seconds, 0);
      const ttft = (way: Way) => roundSummary(summarize(pooled[way].ttft), 2);
      const perThousand = Object.fromEntries(Object.entries(cpu).map(([name, seconds]) => [name, round((seconds / pooled.service.tokens) * 1000, 4)]));
      const level = {
        streams,
        tokensPerSecond: { direct: tokensPerSecond('direct'), service: tokensPerSecond('service') },
        ratio: round(tokensPerSecond('service') / tokensPerSecond('direct'), 3),
        ttftMs: { direct: ttft('direct'), service: ttft('service') },
        ttftAddedMs: { p50: round(ttft('service').p50 - ttft('direct').p50, 2), p99: round(ttft('service').p99 - ttft('direct').p99, 2) },
        // From the wave's sending: its jobs queued (the API's part), then taken by the worker (BullMQ's `processedOn`).
        serviceJobsQueuedMs: roundSummary(summarize(stages.queuedMs), 2),
        serviceJobsActiveMs: roundSummary(summarize(stages.activeMs), 2),
        cpuSecondsPer1000RelayedTokens: perThousand,
      };
      levels.push(level);
      console.log(
        `${String(streams).padStart(4)} streams: ${level.tokensPerSecond.direct} tokens/s direct, ${level.tokensPerSecond.service} through the service (${level.ratio}); ` +
          `TTFT p50 ${level.ttftMs.direct.p50} → ${level.ttftMs.service.p50} ms, p99 ${level.ttftMs.direct.p99} → ${level.ttftMs.service.p99} ms ` +
          `(jobs queued p50 ${level.serviceJobsQueuedMs.p50} / max ${level.serviceJobsQueuedMs.max} ms, taken p50 ${level.serviceJobsActiveMs.p50} / max ${level.serviceJobsActiveMs.max} ms); ` +
          `CPU s per 1,000 tokens ${JSON.stringify(perThousand)}`,
      );
    }

    // Cancellation: how soon the upstream sees a stream the service's client abandoned.
    const reach: number[] = [];
    const request = workloadRequests(stack.target);
    for (let index = 0; index < CANCELS; index++) {
      const statsBefore = (await (await fetch(`${upstreamUrl}/stats`)).json()) as { closedEarly: number[] };
      const stop = new AbortController();
      let abandonedAt = 0;
      const meter = new RequestMeter(undefined, () => {
        // A few tokens in, the client goes away.
        setTimeout(() => {
          abandonedAt = epochMs();
          stop.abort();
        }, 100);
      });
      await streamCompletion(request(index, { maxTokens: 1000, stream: true, agent, timeoutMs: REQUEST_TIMEOUT_MS, signal: stop.signal }), meter).catch(
        () => 0,
      );
      const closed = await (async () => {
        for (let waited = 0; waited < 5000; waited += 10) {
          const stats = (await (await fetch(`${upstreamUrl}/stats`)).json()) as { closedEarly: number[] };
          if (stats.closedEarly.length > statsBefore.closedEarly.length) return stats.closedEarly.at(-1)!;
          await sleep(10);
        }
        return Number.NaN;
      })();
      reach.push(closed - abandonedAt);
    }
    const cancellation = roundSummary(summarize(reach.filter(Number.isFinite)), 2);
    console.log(`cancellation reached the upstream: p50 ${cancellation.p50} ms, max ${cancellation.max} ms (${cancellation.count} of ${CANCELS})`);

    const report = {
      measured:
        'the same waves of streamed chat completions straight at a fast OpenAI-compatible upstream and through the service (ENGINE=openai), paired and pooled; CPU of each process during the service rounds',
      settings: {
        levels: LEVELS,
        tokensPerStream: TOKENS,
        tokensPerSecondPerStream: TOKENS_PER_SECOND,
        pairs: PAIRS,
        apiProcesses: 1,
        workers: 1,
        host: '127.0.0.1',
      },
      machine: describeMachine(),
      levels,
      cancellationReachedUpstreamMs: cancellation,
    };
    const file = resolve(REPO_ROOT, 'bench/results/upstream-relay.json');
    writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
    console.log(`wrote ${file}`);
  } finally {
    agent.destroy();
    await Promise.all(jobs.map((queue) => queue.close()));
    await stack.stop();
    await upstream.stop('SIGKILL');
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
