/**
 * `npm run bench:batch -- [--lines=1000] [--probes=40]`
 *
 * What a running batch costs interactive requests, and what batching costs throughput (issue 13),
 * on a private Redis, API and llama.cpp worker (tiny model, 1 thread, PARALLEL_SEQUENCES 2, no GPU):
 * 1. Time to first token of `probes` streaming interactive requests sent one at a time, first
 *    with the worker idle, then while a batch of `lines` lines runs. Batch lines sit below every
 *    interactive request in the model's queue, so a busy probe waits for one running line to end
 *    (a slot to free) and no more: for each busy probe it counts the lines that ended between its
 *    send and its first token (the batch's answers hash) and, from the BullMQ jobs' timestamps, the
 *    lines that ended or started while the probe's job waited in the queue.
 * 2. Throughput: a second batch of `lines` lines on a quiet worker (no probes), timed by polling
 *    every 100 ms from `in_progress` to `completed`, against the same lines sent as plain
 *    non-stream requests with concurrency slots × 2 (the worker always full).
 * Both batches' output files are checked: one line per custom_id, every status_code 200.
 * Results go to bench/results/batch-priority.json; process logs to test-artifacts/batch-priority/.
 */
import OpenAI, { toFile } from 'openai';
import type { Batch } from 'openai/resources/batches';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { CompletionJobName, completionQueueName, completionQueuePrefix } from '@app/contracts';
import { batchKeys } from '@app/api';
import type { ManagedProcess } from '../../tools/local-stack/managed-process';
import { startRedisServer } from '../../tools/local-stack/redis-server';
import type { LocalRedis } from '../../tools/local-stack/redis-server';
import { childPids } from '../../tools/local-stack/process-tree';
import { REPO_ROOT, startApi, startWorker } from '../../tools/local-stack/services';
import type { RunningApi } from '../../tools/local-stack/services';
import { postChatCompletion } from '../../tools/local-stack/chat-request';
import { describeMachine } from '../common/machine';
import { numberOption } from '../common/command-line';
import { round, roundSummary, summarize } from '../common/stats';

const LINES = numberOption('lines', 1000);
const PROBES = numberOption('probes', 40);
const MODEL = 'tiny-chat';
const KEY = 'sk-bench-batch-0123456789';
const SLOTS = 2;
const THREADS = 1;
const PROBE_MAX_TOKENS = 16;
const PROBE_SEED = 42;
const LINE_MAX_TOKENS = 32;
/** Lines answered before the busy probes start: the batch is well under way. */
const BUSY_AFTER_LINES = 2 * SLOTS;
const POLL_MS = 100;
const LOG_DIR = resolve(REPO_ROOT, 'test-artifacts/batch-priority');

const sleep = (ms: number): Promise<void> => new Promise((resolve_) => setTimeout(resolve_, ms));

/** A pause of 0-190 ms before probe `index`, the same in both phases, so probes do not fall in step with the lines. */
const jitter = (index: number): number => (index * 37) % 200;

interface Probe {
  completionId: string;
  ttftMs: number;
  totalMs: number;
  /** Epoch ms: sent, and first content delta received. */
  sentAt: number;
  firstTokenAt: number;
  /** Busy probes: lines of the batch answered between the send and the first token (answers hash). */
  linesAnsweredWhileWaiting?: number;
  /** Busy probes: whether the batch still had lines to do when the first token came. */
  batchStillRunning?: boolean;
}

/** One streamed interactive request over raw HTTP: time to the first content delta, and to [DONE]. */
async function probe(baseUrl: string): Promise<Omit<Probe, 'linesAnsweredWhileWaiting' | 'batchStillRunning'>> {
  const sentAt = Date.now();
  const started = performance.now();
  const response = await postChatCompletion(baseUrl, KEY, {
    model: MODEL,
    messages: [{ role: 'user', content: 'Tell me a short story about a fox.' }],
    max_tokens: PROBE_MAX_TOKENS,
    seed: PROBE_SEED,
    stream: true,
  });
  if (!response.ok || !response.body) throw new Error(`probe answered ${response.status}: ${await response.text()}`);
  const reader: ReadableStreamDefaultReader<Uint8Array> = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let completionId = '';
  let ttftMs: number | undefined;
  let firstTokenAt = 0;
  let done = false;
  while (!done) {
    const { done: ended, value } = await reader.read();
    if (ended) break;
    buffer += decoder.decode(value, { stream: true });
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = /^data: (.*)$/m.exec(frame)?.[1];
      if (data === undefined) continue;
      if (data === '[DONE]') {
        done = true;
        break;
      }
      const chunk = JSON.parse(data) as { id: string; choices?: Array<{ delta?: { content?: string | null } }>; error?: unknown };
      if (chunk.error) throw new Error(`probe stream failed: ${data}`);
      completionId ||= chunk.id;
      if (ttftMs === undefined && (chunk.choices?.[0]?.delta?.content ?? '') !== '') {
        ttftMs = performance.now() - started;
        firstTokenAt = Date.now();
      }
    }
  }
  await reader.cancel().catch(() => undefined);
  if (ttftMs === undefined) throw new Error(`probe ${completionId} ended without a content delta`);
  return { completionId, ttftMs, totalMs: performance.now() - started, sentAt, firstTokenAt };
}

interface LineRequest {
  custom_id: string;
  method: 'POST';
  url: '/v1/chat/completions';
  body: { model: string; messages: Array<{ role: 'user'; content: string }>; max_tokens: number; seed: number };
}

const TOPICS = ['a river', 'the moon', 'a lost key', 'a red kite', 'an old train', 'a quiet library', 'the sea', 'a small robot'];

function batchLines(count: number, tag: string): LineRequest[] {
  return Array.from({ length: count }, (_, index) => ({
    custom_id: `${tag}-${index}`,
    method: 'POST',
    url: '/v1/chat/completions',
    body: {
      model: MODEL,
      messages: [{ role: 'user', content: `Write one sentence about ${TOPICS[index % TOPICS.length]}.` }],
      max_tokens: LINE_MAX_TOKENS,
      seed: index + 1,
    },
  }));
}

async function createBatch(client: OpenAI, lines: LineRequest[]): Promise<{ batch: Batch; createdAt: number }> {
  const jsonl = `${lines.map((line) => JSON.stringify(line)).join('\n')}\n`;
  const file = await client.files.create({ file: await toFile(Buffer.from(jsonl), 'in.jsonl'), purpose: 'batch' });
  const createdAt = performance.now();
  const batch = await client.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
  return { batch, createdAt };
}

const TERMINAL = new Set(['completed', 'failed', 'expired', 'cancelled']);

/** Polls a batch every POLL_MS until `until` holds or it ends; fails if it ends other than `completed` or stalls. */
async function pollBatch(client: OpenAI, id: string, until: (batch: Batch) => boolean, timeoutMs: number): Promise<Batch> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const batch = await client.batches.retrieve(id);
    if (until(batch)) return batch;
    if (TERMINAL.has(batch.status)) throw new Error(`batch ${id} ended ${batch.status}: ${JSON.stringify(batch)}`);
    if (Date.now() > deadline) throw new Error(`batch ${id} did not get there within ${timeoutMs} ms: ${JSON.stringify(batch)}`);
    await sleep(POLL_MS);
  }
}

interface OutputCheck {
  outputLines: number;
  distinctCustomIds: number;
  missingCustomIds: number;
  non200: number;
  errorFileLines: number;
  ok: boolean;
}

/** One output line per custom_id, every one status_code 200, no error file. */
async function checkOutput(client: OpenAI, batch: Batch, lines: LineRequest[]): Promise<OutputCheck> {
  const text = batch.output_file_id ? await (await client.files.content(batch.output_file_id)).text() : '';
  const rows = text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as { custom_id: string; response: { status_code: number } | null });
  const seen = new Set(rows.map((row) => row.custom_id));
  const missing = lines.filter((line) => !seen.has(line.custom_id)).length;
  const non200 = rows.filter((row) => row.response?.status_code !== 200).length;
  const errorText = batch.error_file_id ? await (await client.files.content(batch.error_file_id)).text() : '';
  const errorFileLines = errorText.split('\n').filter((line) => line.trim() !== '').length;
  const ok = rows.length === lines.length && seen.size === lines.length && missing === 0 && non200 === 0 && errorFileLines === 0;
  if (!ok && errorText) console.error(`error file of ${batch.id} (first lines):\n${errorText.split('\n').slice(0, 5).join('\n')}`);
  return { outputLines: rows.length, distinctCustomIds: seen.size, missingCustomIds: missing, non200, errorFileLines, ok };
}

interface JobTimes {
  id: string;
  name: string;
  timestamp: number;
  processedOn?: number;
  finishedOn?: number;
}

/** The model queue's jobs that are still kept (BullMQ keeps the last 1,000 completed), with their times. */
async function jobTimes(queue: Queue): Promise<JobTimes[]> {
  const jobs = await queue.getJobs(['completed', 'active', 'failed'], 0, -1);
  return jobs
    .filter((job) => job?.id !== undefined)
    .map((job) => ({ id: job.id!, name: job.name, timestamp: job.timestamp, processedOn: job.processedOn, finishedOn: job.finishedOn }));
}

/** Sends `lines` as plain non-stream requests, `concurrency` at a time; every answer must be 200. */
async function sendPlain(baseUrl: string, lines: LineRequest[], concurrency: number): Promise<{ ms: number; non200: number }> {
  let next = 0;
  let non200 = 0;
  const started = performance.now();
  const runner = async (): Promise<void> => {
    while (next < lines.length) {
      const line = lines[next++];
      const response = await postChatCompletion(baseUrl, KEY, line.body);
      await response.text();
      if (response.status !== 200) non200++;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, runner));
  return { ms: performance.now() - started, non200 };
}

async function main(): Promise<void> {
  if (!Number.isInteger(LINES) || LINES < 10 || !Number.isInteger(PROBES) || PROBES < 1) throw new Error('--lines must be an integer ≥ 10 and --probes ≥ 1');
  await rm(LOG_DIR, { recursive: true, force: true });
  await mkdir(LOG_DIR, { recursive: true });
  const filesDir = await mkdtemp(join(tmpdir(), 'bench-batch-files-'));
  // Children from before the stack (tsx's esbuild service) are not ours to stop.
  const preexisting = new Set(childPids(process.pid));
  const started: Array<{ name: string; stop: () => Promise<unknown> }> = [];
  let redis: LocalRedis | undefined;
  let commands: Redis | undefined;
  let queue: Queue | undefined;
  let queueConnection: Redis | undefined;
  let stopping: Promise<void> | undefined;
  const stopAll = (): Promise<void> =>
    (stopping ??= (async () => {
      await queue?.close().catch(() => undefined);
      // BullMQ leaves a connection it was given open: without this, the process would never exit.
      queueConnection?.disconnect();
      commands?.disconnect();
      // Worker and API first, then Redis; then anything a failed start left behind, by its pid.
      for (const { stop } of started.reverse()) await stop().catch(() => undefined);
      await redis?.stop().catch(() => undefined);
      // A start that timed out (startApi, startWorker) does not hand back its process: stop it by its pid.
      const leftovers = childPids(process.pid).filter((pid) => !preexisting.has(pid));
      const signal = (pid: number, name: NodeJS.Signals): void => {
        try {
          process.kill(pid, name);
        } catch {
          // already gone
        }
      };
      for (const pid of leftovers) {
        const commandLine = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
        console.error(`stopping leftover child process ${pid}: ${commandLine.replaceAll('\0', ' ').slice(0, 200)}`);
        signal(pid, 'SIGTERM');
      }
      if (leftovers.length > 0) await sleep(5000);
      for (const pid of childPids(process.pid).filter((pid) => leftovers.includes(pid))) signal(pid, 'SIGKILL');
      await rm(filesDir, { recursive: true, force: true });
    })());
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      console.error(`\n${signal}: stopping the processes the benchmark started…`);
      void stopAll().then(() => process.exit(130));
    });
  }
  const phaseTimes: Record<string, number> = {};
  const benchStarted = performance.now();
  try {
    redis = await startRedisServer({ logFile: join(LOG_DIR, 'redis.log') });
    const api: RunningApi = await startApi({
      redisUrl: redis.url,
      apiKeys: [KEY],
      models: [MODEL],
      logFile: join(LOG_DIR, 'api.log'),
      env: { FILES_DIR: filesDir, FILES_STORAGE: 'local' },
    });
    started.push({ name: 'api', stop: () => api.process.stop('SIGTERM') });
    const worker: ManagedProcess = await startWorker({
      redisUrl: redis.url,
      modelName: MODEL,
      modelPath: resolve(REPO_ROOT, `models/${MODEL}.gguf`),
      parallelSequences: SLOTS,
      threads: THREADS,
      logFile: join(LOG_DIR, 'worker.log'),
      env: { GPU: 'false', HEALTH_PORT: '0' },
    });
    started.push({ name: 'worker', stop: () => worker.stop('SIGTERM') });
    commands = new Redis(redis.url);
    queueConnection = new Redis(redis.url, { maxRetriesPerRequest: null });
    queue = new Queue(completionQueueName(MODEL), { connection: queueConnection, prefix: completionQueuePrefix(MODEL) });
    const client = new OpenAI({ baseURL: api.baseUrl, apiKey: KEY, maxRetries: 0, timeout: 60_000 });
    console.log(`api ${api.baseUrl}, worker pid ${worker.pid}; ${LINES} lines, ${PROBES} probes, ${SLOTS} slots, ${THREADS} thread; logs in ${LOG_DIR}`);

    // Warm the worker: both sequences, and the probe's prompt.
    await sendPlain(api.baseUrl, batchLines(SLOTS * 2, 'warm'), SLOTS);
    await probe(api.baseUrl);

    // 1a. Idle probes.
    let phase = performance.now();
    const idle: Probe[] = [];
    for (let index = 0; index < PROBES; index++) {
      await sleep(jitter(index));
      idle.push(await probe(api.baseUrl));
    }
    phaseTimes.idleProbesS = (performance.now() - phase) / 1000;
    const idleTtft = summarize(idle.map((entry) => entry.ttftMs));
    console.log(`idle  TTFT p50 ${idleTtft.p50.toFixed(1)} ms, p95 ${idleTtft.p95.toFixed(1)} ms, max ${idleTtft.max.toFixed(1)} ms`);

    // 1b. Busy probes, while a batch runs.
    phase = performance.now();
    const busyLines = batchLines(LINES, 'busy');
    const { batch: busyBatch, createdAt: busyCreatedAt } = await createBatch(client, busyLines);
    const keys = batchKeys(busyBatch.id);
    const done = async (): Promise<{ answered: number; failed: number }> => {
      const [answered, failed] = await Promise.all([commands!.hlen(keys.answers), commands!.hlen(keys.failures)]);
      return { answered, failed };
    };
    const busyStart = await pollBatch(
      client,
      busyBatch.id,
      (batch) => batch.status === 'in_progress' && batch.request_counts!.completed >= BUSY_AFTER_LINES,
      120_000,
    );
    console.log(`busy batch ${busyBatch.id} in_progress, ${busyStart.request_counts?.completed}/${busyStart.request_counts?.total} done; probing`);
    const busy: Probe[] = [];
    for (let index = 0; index < PROBES; index++) {
      await sleep(jitter(index));
      const before = await done();
      const result = await probe(api.baseUrl);
      const after = await done();
      busy.push({ ...result, linesAnsweredWhileWaiting: after.answered - before.answered, batchStillRunning: after.answered + after.failed < LINES });
    }
    const probesEndedAt = Date.now();
    // Job times now, while BullMQ still keeps the jobs of the probing window (it keeps the last 1,000 completed).
    const jobsAfterProbes = await jobTimes(queue);
    const busyEnded = await pollBatch(client, busyBatch.id, (batch) => batch.status === 'completed', 60 * 60_000);
    const busyBatchMs = performance.now() - busyCreatedAt;
    phaseTimes.busyBatchS = (performance.now() - phase) / 1000;
    const busyCheck = await checkOutput(client, busyEnded, busyLines);

    // For each busy probe, from the jobs' own times: lines that ended, and lines that started, while its job waited.
    const byId = new Map(jobsAfterProbes.map((job) => [job.id, job]));
    const lineJobs = jobsAfterProbes.filter((job) => job.name === CompletionJobName.BatchLine);
    const waits = busy.map((entry) => {
      const job = byId.get(entry.completionId);
      if (!job?.processedOn) return undefined;
      const queuedAt = job.timestamp;
      const takenAt = job.processedOn;
      return {
        queueWaitMs: takenAt - queuedAt,
        // What the issue's bar compares: time to first token once a slot has freed.
        ttftAfterSlotMs: entry.ttftMs - (takenAt - queuedAt),
        linesEnded: lineJobs.filter((line) => line.finishedOn !== undefined && line.finishedOn > queuedAt && line.finishedOn <= takenAt).length,
        linesStarted: lineJobs.filter((line) => line.processedOn !== undefined && line.processedOn > queuedAt && line.processedOn < takenAt).length,
      };
    });
    const known = waits.filter((wait) => wait !== undefined);
    const idleWaits = idle.flatMap((entry) => {
      const job = byId.get(entry.completionId);
      return job?.processedOn === undefined ? [] : [{ waitMs: job.processedOn - job.timestamp, ttftMs: entry.ttftMs }];
    });
    const idleAfterSlot = summarize(idleWaits.map(({ waitMs, ttftMs }) => ttftMs - waitMs));
    const busyAfterSlot = summarize(known.map((wait) => wait.ttftAfterSlotMs));
    const busyTtft = summarize(busy.map((entry) => entry.ttftMs));
    const answeredWhileWaiting = busy.map((entry) => entry.linesAnsweredWhileWaiting ?? 0);
    console.log(
      `busy  TTFT p50 ${busyTtft.p50.toFixed(1)} ms, p95 ${busyTtft.p95.toFixed(1)} ms, max ${busyTtft.max.toFixed(1)} ms; lines answered while a probe waited: max ${Math.max(...answeredWhileWaiting)}`,
    );
    console.log(`busy batch completed in ${(busyBatchMs / 1000).toFixed(1)} s; output ${busyCheck.ok ? 'ok' : `NOT ok ${JSON.stringify(busyCheck)}`}`);

    // 2a. Throughput of a batch on a quiet worker.
    phase = performance.now();
    const quietLines = batchLines(LINES, 'quiet');
    const { batch: quietBatch, createdAt: quietCreatedAt } = await createBatch(client, quietLines);
    let inProgressSeenAt: number | undefined;
    let doneWhenSeenInProgress: number | undefined;
    const quietKeys = batchKeys(quietBatch.id);
    const quietEnded = await pollBatch(
      client,
      quietBatch.id,
      (batch) => {
        if (inProgressSeenAt === undefined && batch.status !== 'validating') {
          inProgressSeenAt = performance.now();
          void commands!.hlen(quietKeys.answers).then((answered) => (doneWhenSeenInProgress = answered));
        }
        return batch.status === 'completed';
      },
      60 * 60_000,
    );
    const completedSeenAt = performance.now();
    phaseTimes.quietBatchS = (completedSeenAt - phase) / 1000;
    const quietCheck = await checkOutput(client, quietEnded, quietLines);
    const quietJobs = (await jobTimes(queue)).filter(
      (job) => job.name === CompletionJobName.BatchLine && job.id.includes(quietBatch.id.slice('batch_'.length)),
    );
    const batchMs = completedSeenAt - (inProgressSeenAt ?? quietCreatedAt);
    const batchEndToEndMs = completedSeenAt - quietCreatedAt;
    const firstLineStart = Math.min(...quietJobs.map((job) => job.processedOn ?? Infinity));
    const lastLineEnd = Math.max(...quietJobs.map((job) => job.finishedOn ?? 0));
    const linesSpanMs = quietJobs.length === LINES ? lastLineEnd - firstLineStart : undefined;
    const lineRunMs = summarize(
      quietJobs.filter((job) => job.processedOn !== undefined && job.finishedOn !== undefined).map((job) => job.finishedOn! - job.processedOn!),
    );
    console.log(
      `quiet batch: ${(batchMs / 1000).toFixed(1)} s in_progress→completed (${(LINES / (batchMs / 1000)).toFixed(2)} lines/s); output ${quietCheck.ok ? 'ok' : `NOT ok ${JSON.stringify(quietCheck)}`}`,
    );

    // 2b. The same lines as plain requests, the worker kept full.
    phase = performance.now();
    const plainStartedAt = Date.now();
    const plain = await sendPlain(api.baseUrl, quietLines, SLOTS * 2);
    phaseTimes.plainS = (performance.now() - phase) / 1000;
    const plainJobs = (await jobTimes(queue)).filter((job) => job.name !== CompletionJobName.BatchLine && job.timestamp >= plainStartedAt);
    const plainSpanMs =
      plainJobs.length === LINES
        ? Math.max(...plainJobs.map((job) => job.finishedOn ?? 0)) - Math.min(...plainJobs.map((job) => job.processedOn ?? Infinity))
        : undefined;
    const batchRate = LINES / (batchMs / 1000);
    const plainRate = LINES / (plain.ms / 1000);
    console.log(
      `plain: ${(plain.ms / 1000).toFixed(1)} s (${plainRate.toFixed(2)} lines/s), ${plain.non200} not 200; batch/plain ${(batchRate / plainRate).toFixed(3)}`,
    );

    const meanLineMs = (batchMs / LINES) * SLOTS;
    const results = {
      command: `npm run bench:batch -- --lines=${LINES} --probes=${PROBES}`,
      at: new Date().toISOString(),
      machine: describeMachine(),
      setup: {
        model: `models/${MODEL}.gguf`,
        parallelSequences: SLOTS,
        threads: THREADS,
        gpu: false,
        lines: LINES,
        probes: PROBES,
        probe: { maxTokens: PROBE_MAX_TOKENS, seed: PROBE_SEED, stream: true, tier: 'default', pauseBeforeEachMs: '0-190 ((i × 37) mod 200)' },
        line: { maxTokens: LINE_MAX_TOKENS, seeds: 'line index + 1' },
        busyProbesStartAfterLines: BUSY_AFTER_LINES,
        pollMs: POLL_MS,
      },
      ttft: {
        idleMs: roundSummary(idleTtft),
        busyMs: roundSummary(busyTtft),
        p50Ratio: round(busyTtft.p50 / idleTtft.p50, 2),
        p50ExtraMs: round(busyTtft.p50 - idleTtft.p50, 1),
        meanBatchLineMs: round(meanLineMs, 1),
        meanBatchLineMsHow: 'quiet batch in_progress→completed wall time / lines × parallel slots',
        batchLineRunMsFromJobs: roundSummary(lineRunMs),
        busyProbesWhileBatchRan: busy.filter((entry) => entry.batchStillRunning).length,
        linesAnsweredBetweenSendAndFirstToken: {
          max: Math.max(...answeredWhileWaiting),
          mean: round(answeredWhileWaiting.reduce((a, b) => a + b, 0) / answeredWhileWaiting.length, 2),
        },
        fromJobTimes: {
          probesWithJobTimes: known.length,
          queueWaitMs: roundSummary(summarize(known.map((wait) => wait.queueWaitMs))),
          maxLinesEndedWhileQueued: Math.max(0, ...known.map((wait) => wait.linesEnded)),
          maxLinesStartedWhileQueued: Math.max(0, ...known.map((wait) => wait.linesStarted)),
          probesOvertakenByALine: known.filter((wait) => wait.linesStarted > 0).length,
        },
        idleQueueWaitMs: roundSummary(summarize(idleWaits.map(({ waitMs }) => waitMs))),
        afterSlotFrees: {
          how: 'per probe: time to first token minus the time its job waited in the queue (BullMQ job times)',
          idleMs: roundSummary(idleAfterSlot),
          busyMs: roundSummary(busyAfterSlot),
          p50Ratio: round(busyAfterSlot.p50 / idleAfterSlot.p50, 2),
          goal: 'busy p50 within +10% of idle (ratio <= 1.10)',
        },
      },
      busyBatch: {
        id: busyBatch.id,
        createToCompletedS: round(busyBatchMs / 1000, 2),
        requestCounts: busyEnded.request_counts,
        output: busyCheck,
        probesEndedBeforeCompletion: probesEndedAt < Date.now(),
      },
      throughput: {
        batch: {
          id: quietBatch.id,
          inProgressToCompletedS: round(batchMs / 1000, 2),
          createToCompletedS: round(batchEndToEndMs / 1000, 2),
          firstLineStartToLastLineEndS: linesSpanMs === undefined ? null : round(linesSpanMs / 1000, 2),
          linesAnsweredWhenFirstSeenInProgress: doneWhenSeenInProgress ?? null,
          linesPerSecond: round(batchRate, 2),
          requestCounts: quietEnded.request_counts,
          usage: (quietEnded as Batch & { usage?: unknown }).usage ?? null,
          output: quietCheck,
        },
        plain: {
          concurrency: SLOTS * 2,
          seconds: round(plain.ms / 1000, 2),
          firstJobStartToLastJobEndS: plainSpanMs === undefined ? null : round(plainSpanMs / 1000, 2),
          linesPerSecond: round(plainRate, 2),
          non200: plain.non200,
        },
        batchOverPlain: round(batchRate / plainRate, 3),
        batchOverPlainCreateToCompleted: round(LINES / (batchEndToEndMs / 1000) / plainRate, 3),
        batchOverPlainByJobSpans: linesSpanMs === undefined || plainSpanMs === undefined ? null : round(plainSpanMs / linesSpanMs, 3),
        how: 'batchOverPlain: batch lines/s (own 100 ms polling, first seen in_progress → first seen completed) over plain lines/s (first send → last answer); CreateToCompleted: from the create call instead; ByJobSpans: first job start → last job end on the worker, both ways (BullMQ job times)',
        goal: '≥ 0.95',
      },
      phaseSeconds: Object.fromEntries(
        Object.entries({ ...phaseTimes, total: (performance.now() - benchStarted) / 1000 }).map(([key, value]) => [key, round(value, 1)]),
      ),
    };
    console.log(JSON.stringify(results.ttft, null, 2));
    const out = resolve(REPO_ROOT, 'bench/results');
    await mkdir(out, { recursive: true });
    await writeFile(resolve(out, 'batch-priority.json'), `${JSON.stringify(results, null, 2)}\n`);
    if (!busyCheck.ok || !quietCheck.ok || plain.non200 > 0) throw new Error('correctness check failed: see the output checks above');
  } finally {
    await stopAll();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
