/**
 * `npm run bench:fairness -- [--a-requests=400] [--max-tokens=48] [--b-alone=20] [--rounds=2] [--express=0]`
 *
 * Fair share between API keys (issue 34), on a private Redis, API and llama.cpp worker (tiny
 * model, 1 thread, PARALLEL_SEQUENCES 2, no GPU). Key A queues `a-requests` requests at once; key
 * B sends one request a second while A's backlog lasts. Three phases on the same worker:
 * 1. B alone (`b-alone` requests, one a second): B's queue wait with nobody else there;
 * 2. A's flood and B, FAIR_SHARE=false (first come, first served within the tier);
 * 3. the same, FAIR_SHARE=true;
 * 4. with `--express=N` (N > 0; the worker then holds N express sequences, EXPRESS_SEQUENCES, in
 *    every phase), the same with FAIR_SHARE_EXPRESS=true as well: B's jobs take the express lane;
 * and 2-3 (2-4) again for each further round (off and on in turn, so the machine's other load falls
 * on both alike).
 * Queue wait is BullMQ's processedOn − timestamp of each job (added → taken by the worker). A's
 * throughput is its completion tokens over first send → last answer. Every request must answer
 * 200. The API restarts between phases with the setting; MAX_QUEUE_WAIT_MS is raised so that A's
 * backlog is served, not refused. Smaller counts (`--a-requests=100`) make it quicker, and the
 * results file says which were used.
 * Results go to bench/results/fairness.json; process logs to test-artifacts/fairness/.
 */
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { completionQueueName, completionQueuePrefix, expressQueueName } from '@app/contracts';
import type { ManagedProcess } from '../../tools/local-stack/managed-process';
import { startRedisServer } from '../../tools/local-stack/redis-server';
import type { LocalRedis } from '../../tools/local-stack/redis-server';
import { REPO_ROOT, startApi, startWorker } from '../../tools/local-stack/services';
import type { RunningApi } from '../../tools/local-stack/services';
import { postChatCompletion } from '../../tools/local-stack/chat-request';
import { describeMachine } from '../common/machine';
import { numberOption } from '../common/command-line';
import { round, roundSummary, summarize } from '../common/stats';

const A_REQUESTS = numberOption('a-requests', 400);
const MAX_TOKENS = numberOption('max-tokens', 48);
const B_ALONE = numberOption('b-alone', 20);
const ROUNDS = numberOption('rounds', 2);
const EXPRESS = numberOption('express', 0);
const MODEL = 'tiny-chat';
const KEY_A = 'sk-bench-fairness-a-0123456789';
const KEY_B = 'sk-bench-fairness-b-0123456789';
const SLOTS = 2;
const THREADS = 1;
const B_INTERVAL_MS = 1000;
const LOG_DIR = resolve(REPO_ROOT, 'test-artifacts/fairness');

const sleep = (ms: number): Promise<void> => new Promise((resolve_) => setTimeout(resolve_, ms));

interface Answer {
  id: string;
  completionTokens: number;
  /** performance.now() when the answer was in. */
  endedAt: number;
}

/** One non-streamed request; fails the benchmark on anything but 200. */
async function ask(baseUrl: string, key: string, seed: number): Promise<Answer> {
  const response = await postChatCompletion(baseUrl, key, {
    model: MODEL,
    messages: [{ role: 'user', content: 'Tell me a short story about a fox.' }],
    max_tokens: MAX_TOKENS,
    seed,
  });
  const body = (await response.json()) as { id: string; usage: { completion_tokens: number } };
  if (response.status !== 200) throw new Error(`answered ${response.status}: ${JSON.stringify(body)}`);
  return { id: body.id, completionTokens: body.usage.completion_tokens, endedAt: performance.now() };
}

/** The model's shared queue, and its express lane (FAIR_SHARE_EXPRESS) where B's jobs may have run instead. */
type Queues = readonly Queue[];

/** A job's times on the worker (BullMQ's own, epoch ms); its end is recorded just after its answer went out. */
async function jobTimes(queues: Queues, id: string): Promise<{ added: number; started: number; finished: number }> {
  // Up to 10 s: a worker on a loaded machine records a job's end some time after its answer went out.
  for (let tries = 0; tries < 500; tries++) {
    const job = (await Promise.all(queues.map((queue) => queue.getJob(id)))).find((found) => found?.id !== undefined);
    if (job?.processedOn !== undefined && job.finishedOn !== undefined) return { added: job.timestamp, started: job.processedOn, finished: job.finishedOn };
    await sleep(20);
  }
  throw new Error(`job ${id} has no start or end time`);
}

/** How long a job waited in the queue. */
async function queueWaitMs(queues: Queues, id: string): Promise<number> {
  const times = await jobTimes(queues, id);
  return times.started - times.added;
}

/** B's requests, one a second, until `stop()` says so (after at least one); their queue waits. */
async function keyB(baseUrl: string, queue: Queues, stop: () => boolean): Promise<number[]> {
  const waits: Array<Promise<number>> = [];
  for (let index = 0; waits.length === 0 || !stop(); index++) {
    waits.push(ask(baseUrl, KEY_B, 1000 + index).then((answer) => queueWaitMs(queue, answer.id)));
    await sleep(B_INTERVAL_MS);
  }
  return Promise.all(waits);
}

/** off: FAIR_SHARE=false; on: FAIR_SHARE=true; express: FAIR_SHARE and FAIR_SHARE_EXPRESS. */
type Mode = 'off' | 'on' | 'express';

interface Phase {
  fairShare: boolean;
  mode: Mode;
  b: { requests: number; queueWaitMs: ReturnType<typeof roundSummary> };
  a: {
    requests: number;
    seconds: number;
    completionTokens: number;
    tokensPerSecond: number;
    /** Completion tokens over the first job's start → the last job's end on the worker (admission left out). */
    workerTokensPerSecond: number;
    queueWaitMs: ReturnType<typeof roundSummary>;
    /** How long one of A's jobs ran: what a request that finds every slot busy waits at most for one to free, fair share or not. */
    jobRunMs: ReturnType<typeof roundSummary>;
  };
}

/** A's flood at once, B one a second while it lasts. */
async function flood(baseUrl: string, queue: Queues, mode: Mode): Promise<Phase> {
  const started = performance.now();
  let aDone = false;
  const a = Promise.all(Array.from({ length: A_REQUESTS }, (_, index) => ask(baseUrl, KEY_A, index + 1))).finally(() => {
    aDone = true;
  });
  const bWaits = await keyB(baseUrl, queue, () => aDone);
  const aAnswers = await a;
  const seconds = (Math.max(...aAnswers.map((answer) => answer.endedAt)) - started) / 1000;
  const completionTokens = aAnswers.reduce((sum, answer) => sum + answer.completionTokens, 0);
  const aTimes = await Promise.all(aAnswers.map((answer) => jobTimes(queue, answer.id)));
  const aWaits = aTimes.map((times) => times.started - times.added);
  const workerSeconds = (Math.max(...aTimes.map((times) => times.finished)) - Math.min(...aTimes.map((times) => times.started))) / 1000;
  const phase: Phase = {
    fairShare: mode !== 'off',
    mode,
    b: { requests: bWaits.length, queueWaitMs: roundSummary(summarize(bWaits)) },
    a: {
      requests: A_REQUESTS,
      seconds: round(seconds, 2),
      completionTokens,
      tokensPerSecond: round(completionTokens / seconds, 1),
      workerTokensPerSecond: round(completionTokens / workerSeconds, 1),
      queueWaitMs: roundSummary(summarize(aWaits)),
      jobRunMs: roundSummary(summarize(aTimes.map((times) => times.finished - times.started))),
    },
  };
  console.log(
    `fair share ${mode.padEnd(7)}: B queue wait p50 ${phase.b.queueWaitMs.p50} ms p99 ${phase.b.queueWaitMs.p99} ms (${bWaits.length}); A ${phase.a.tokensPerSecond} tokens/s over ${phase.a.seconds} s (${phase.a.workerTokensPerSecond} on the worker), A's jobs ran p50 ${phase.a.jobRunMs.p50} ms`,
  );
  return phase;
}

async function main(): Promise<void> {
  await mkdir(LOG_DIR, { recursive: true });
  let redis: LocalRedis | undefined;
  let api: RunningApi | undefined;
  let worker: ManagedProcess | undefined;
  let connection: Redis | undefined;
  let queue: Queue | undefined;
  let lane: Queue | undefined;
  const benchStarted = performance.now();
  const startApiWith = async (mode: Mode): Promise<RunningApi> => {
    await api?.process.stop('SIGTERM');
    api = await startApi({
      redisUrl: redis!.url,
      apiKeys: [KEY_A, KEY_B],
      models: [MODEL],
      logFile: join(LOG_DIR, `api-fair-share-${mode}.log`),
      env: {
        FAIR_SHARE: String(mode !== 'off'),
        FAIR_SHARE_EXPRESS: String(mode === 'express'),
        // Every job on the shared queue (and the lane), as fair share orders it: with one worker,
        // affinity would put the repeated prompt on the worker's own queue, served first.
        AFFINITY: 'false',
        MAX_QUEUE_WAIT_MS: '600000',
        MAX_WAITING_JOBS: String(A_REQUESTS * 3),
      },
    });
    // Warm the new API instance and both sequences before measuring.
    await Promise.all(Array.from({ length: SLOTS * 4 }, (_, index) => ask(api!.baseUrl, KEY_B, 9000 + index)));
    return api;
  };
  try {
    redis = await startRedisServer({ logFile: join(LOG_DIR, 'redis.log') });
    worker = await startWorker({
      redisUrl: redis.url,
      modelName: MODEL,
      modelPath: resolve(REPO_ROOT, `models/${MODEL}.gguf`),
      parallelSequences: SLOTS,
      threads: THREADS,
      logFile: join(LOG_DIR, 'worker.log'),
      env: { GPU: 'false', HEALTH_PORT: '0', EXPRESS_SEQUENCES: String(EXPRESS) },
    });
    connection = new Redis(redis.url, { maxRetriesPerRequest: null });
    queue = new Queue(completionQueueName(MODEL), { connection, prefix: completionQueuePrefix(MODEL) });
    lane = new Queue(expressQueueName(MODEL), { connection, prefix: completionQueuePrefix(MODEL) });
    const queues = [queue, lane];
    console.log(
      `A: ${A_REQUESTS} requests at once; B: one a second; ${MAX_TOKENS} tokens at most each; ${SLOTS} slots + ${EXPRESS} express, ${THREADS} thread; logs in ${LOG_DIR}`,
    );

    let { baseUrl } = await startApiWith('off');
    let count = 0;
    const bAlone = summarize(await keyB(baseUrl, queues, () => ++count >= B_ALONE));
    console.log(`B alone: queue wait p50 ${bAlone.p50.toFixed(1)} ms p99 ${bAlone.p99.toFixed(1)} ms (${bAlone.count})`);
    // Off and on in turn, so that what the machine's other load does falls on both alike.
    const rounds: Array<{ off: Phase; on: Phase; express?: Phase }> = [];
    for (let round_ = 0; round_ < ROUNDS; round_++) {
      if (round_ > 0) ({ baseUrl } = await startApiWith('off'));
      const off = await flood(baseUrl, queues, 'off');
      ({ baseUrl } = await startApiWith('on'));
      const on = await flood(baseUrl, queues, 'on');
      if (EXPRESS === 0) {
        rounds.push({ off, on });
        continue;
      }
      ({ baseUrl } = await startApiWith('express'));
      rounds.push({ off, on, express: await flood(baseUrl, queues, 'express') });
    }
    const bP99 = (phases: Phase[]) => Math.max(...phases.map((phase) => phase.b.queueWaitMs.p99));
    const aRate = (phases: Phase[], rate: 'tokensPerSecond' | 'workerTokensPerSecond') => phases.reduce((sum, phase) => sum + phase.a[rate], 0) / phases.length;
    const [offs, ons] = [rounds.map((pair) => pair.off), rounds.map((pair) => pair.on)];
    const expresses = rounds.flatMap((pair) => (pair.express ? [pair.express] : []));
    const expressComparison =
      expresses.length === 0
        ? undefined
        : {
            bQueueWaitP99Ms: bP99(expresses),
            bQueueWaitP99OverAlone: round(bP99(expresses) / Math.max(bAlone.p99, 1e-3), 2),
            aThroughputOverOff: round(aRate(expresses, 'tokensPerSecond') / aRate(offs, 'tokensPerSecond'), 3),
            aWorkerThroughputOverOff: round(aRate(expresses, 'workerTokensPerSecond') / aRate(offs, 'workerTokensPerSecond'), 3),
            aThroughputOverOn: round(aRate(expresses, 'tokensPerSecond') / aRate(ons, 'tokensPerSecond'), 3),
          };

    const results = {
      command: `npm run bench:fairness -- --a-requests=${A_REQUESTS} --max-tokens=${MAX_TOKENS} --b-alone=${B_ALONE} --rounds=${ROUNDS} --express=${EXPRESS}`,
      at: new Date().toISOString(),
      machine: describeMachine(),
      setup: {
        model: `models/${MODEL}.gguf`,
        parallelSequences: SLOTS,
        expressSequences: EXPRESS,
        threads: THREADS,
        gpu: false,
        aRequests: A_REQUESTS,
        maxTokens: MAX_TOKENS,
        bIntervalMs: B_INTERVAL_MS,
      },
      queueWaitHow: 'BullMQ job processedOn − timestamp (added to the queue → taken by the worker)',
      bAlone: { requests: bAlone.count, queueWaitMs: roundSummary(bAlone) },
      rounds,
      comparison: {
        how: "B's p99: the highest of the rounds; A's throughput: the mean of the rounds",
        bQueueWaitP99Ms: { alone: round(bAlone.p99, 1), fairShareOff: bP99(offs), fairShareOn: bP99(ons) },
        bQueueWaitP99OnOverAlone: round(bP99(ons) / Math.max(bAlone.p99, 1e-3), 2),
        bQueueWaitP99OnOverOff: round(bP99(ons) / Math.max(bP99(offs), 1e-3), 4),
        aThroughputOnOverOff: round(aRate(ons, 'tokensPerSecond') / aRate(offs, 'tokensPerSecond'), 3),
        aWorkerThroughputOnOverOff: round(aRate(ons, 'workerTokensPerSecond') / aRate(offs, 'workerTokensPerSecond'), 3),
        express: expressComparison,
        goals: "B's p99 with fair share on within 2× of B alone; A's throughput on ≥ 0.95 × off",
      },
      totalSeconds: round((performance.now() - benchStarted) / 1000, 1),
    };
    console.log(JSON.stringify(results.comparison, null, 2));
    const out = resolve(REPO_ROOT, 'bench/results');
    await mkdir(out, { recursive: true });
    await writeFile(resolve(out, 'fairness.json'), `${JSON.stringify(results, null, 2)}\n`);
  } finally {
    await queue?.close().catch(() => undefined);
    await lane?.close().catch(() => undefined);
    connection?.disconnect();
    await api?.process.stop('SIGTERM').catch(() => undefined);
    await worker?.stop('SIGTERM').catch(() => undefined);
    await redis?.stop().catch(() => undefined);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
