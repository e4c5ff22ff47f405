/**
 * `npm run bench:refusals`: how fast a burst is refused when the waiting line is full. The whole
 * service on 127.0.0.1 (Redis, one worker with the synthetic engine and 2 slots of answers that
 * never end within the run, the API with API_PROCESSES processes, MAX_WAITING_JOBS=8). Streams
 * are opened one by one until the API answers `503 queue_full` (2 run, 8 wait, all kept open);
 * then bursts of `--size` streamed requests go at once, `--bursts` times `--pause-ms` apart, and
 * each request's time to its answer's status is recorded. Every one should be a 503: a client that
 * will be refused should know at once. The first burst is reported apart (cold paths).
 * Options: --size=100 --bursts=6 --pause-ms=500 --api-processes=N. Writes bench/results/refusal-burst.json.
 */
import { completionQueueName, completionQueuePrefix, workerQueueName } from '@app/contracts';
import { Queue } from 'bullmq';
import { writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { REPO_ROOT } from '../../tools/local-stack/services';
import { stopEverythingOnSignals } from '../common/cleanup';
import { numberOption } from '../common/command-line';
import { requestBody } from '../common/workload';
import { startServiceStack } from '../common/service-stack';
import { roundSummary, summarize } from '../common/stats';
import type { Summary } from '../common/stats';

const SIZE = numberOption('size', 100);
const BURSTS = numberOption('bursts', 6);
const PAUSE_MS = numberOption('pause-ms', 500);
const API_PROCESSES = numberOption('api-processes', availableParallelism());
const MAX_WAITING_JOBS = 8;
const ENGINE = { kind: 'synthetic', tokens: 1_000_000, tokenIntervalMs: 50, slots: 2, contextSize: 4096 } as const;
const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));

interface Answer {
  status: number;
  ms: number;
  /** Closes the stream (one that was let in). */
  close: () => void;
}

/** Sends one streamed request; resolves when its status arrives. */
function send(url: URL, apiKey: string, body: string, agent: Agent, signal?: AbortSignal): Promise<Answer> {
  return new Promise((resolve_, reject) => {
    const startedAt = performance.now();
    const req = request(url, {
      method: 'POST',
      agent,
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    });
    req.on('response', (response) => {
      const ms = performance.now() - startedAt;
      response.resume();
      resolve_({ status: response.statusCode ?? 0, ms, close: () => req.destroy() });
    });
    req.on('error', reject);
    signal?.addEventListener('abort', () => req.destroy(), { once: true });
    req.end(body);
  });
}

async function main(): Promise<void> {
  stopEverythingOnSignals();
  const stack = await startServiceStack('refusal-burst', ENGINE, API_PROCESSES, { MAX_WAITING_JOBS: String(MAX_WAITING_JOBS) });
  const { baseUrl, apiKey, model } = stack.target;
  const url = new URL(`${baseUrl}/chat/completions`);
  const agent = new Agent({ keepAlive: true, maxSockets: Infinity });
  const admitted: Answer[] = [];
  try {
    const open = (index: number): void => {
      const abandoned = new AbortController();
      void send(url, apiKey, requestBody(index, model, 3000, true), agent, abandoned.signal).catch(() => undefined);
      admitted.push({ status: 0, ms: 0, close: () => abandoned.abort() });
    };
    const queues = [completionQueueName(model), workerQueueName(model, 'bench-refusal-burst')].map(
      (name) => new Queue(name, { connection: { url: stack.redisUrl }, prefix: completionQueuePrefix(model) }),
    );
    try {
      // Fill the line: the slots' streams, then MAX_WAITING_JOBS more, kept open (their status comes with
      // their first token). Counted as the service counts the line: waiting jobs, and those a worker took
      // beyond its slots (they wait in its slot gate); topped up while some were refused on the way in.
      for (let index = 0; index < ENGINE.slots + MAX_WAITING_JOBS; index++) open(index);
      for (let waited = 0; ; waited += 100) {
        await sleep(100);
        const counts = await Promise.all(queues.map((queue) => queue.getJobCounts('wait', 'prioritized', 'active')));
        const active = counts.reduce((sum, count) => sum + count.active, 0);
        const inLine = counts.reduce((sum, { wait, prioritized }) => sum + wait + prioritized, 0) + Math.max(0, active - ENGINE.slots);
        if (inLine >= MAX_WAITING_JOBS) break;
        if (waited > 30_000) throw new Error(`the line never filled (${inLine} in line, ${active} running)`);
        for (let missing = MAX_WAITING_JOBS - inLine; missing > 0; missing--) open(admitted.length);
      }
    } finally {
      await Promise.all(queues.map((queue) => queue.close()));
    }
    const probe = await send(url, apiKey, requestBody(999, model, 16, true), agent);
    if (probe.status !== 503) throw new Error(`a request into the full line got HTTP ${probe.status}`);
    const bursts: Array<{ refusedMs: Summary; notRefused: number }> = [];
    for (let burst = 0; burst < BURSTS; burst++) {
      const answers = await Promise.all(Array.from({ length: SIZE }, (_, index) => send(url, apiKey, requestBody(1000 + index, model, 16, true), agent)));
      for (const answer of answers) if (answer.status !== 503) answer.close();
      const refused = answers.filter((answer) => answer.status === 503);
      bursts.push({ refusedMs: roundSummary(summarize(refused.map((answer) => answer.ms)), 2), notRefused: answers.length - refused.length });
      await sleep(PAUSE_MS);
    }
    const [first, ...rest] = bursts;
    const later = roundSummary(summarize(rest.map((burst) => burst.refusedMs.p50)), 2);
    const report = {
      measured: `bursts of ${SIZE} streamed requests into a full waiting line (MAX_WAITING_JOBS=${MAX_WAITING_JOBS}): time to each 503's status`,
      settings: { size: SIZE, bursts: BURSTS, pauseMs: PAUSE_MS, apiProcesses: API_PROCESSES, engine: ENGINE, maxWaitingJobs: MAX_WAITING_JOBS },
      firstBurst: first,
      laterBursts: rest,
      laterBurstsP50OfP50Ms: later.p50,
    };
    const file = resolve(REPO_ROOT, 'bench/results/refusal-burst.json');
    writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
    console.log(`bursts of ${SIZE} into a full line (ms to the 503)   p50     p95     max   not refused`);
    for (const [index, burst] of bursts.entries()) {
      const { p50, p95, max } = burst.refusedMs;
      console.log(
        `  burst ${index + 1}${index === 0 ? ' (first)' : '        '}   ${[p50, p95, max].map((value) => value.toFixed(1).padStart(7)).join(' ')}   ${burst.notRefused}`,
      );
    }
    console.log(`wrote ${file}`);
  } finally {
    for (const answer of admitted) answer.close();
    agent.destroy();
    await stack.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
