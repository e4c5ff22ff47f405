/**
 * `npm run bench:burst`: where the time to first token goes when streams arrive together, as the
 * closed loop of `npm run bench` makes them arrive (its answers all last as long, so its clients
 * send again together). Each burst sends `size` streamed requests at once to the whole service
 * (Redis, one worker with the synthetic engine, the API with API_PROCESSES processes), waits for
 * every answer, and splits each request's time to first text into four stages, from one clock:
 *   client → API: sent, to the API's onRequest (its request log: time − totalMs);
 *   API → queued: to BullMQ's add (the job's `timestamp`): validation and admission;
 *   queued → active: to a worker asking for it (the job's `processedOn`: when the worker sent
 *     the move to active, or the previous job's move to finished that fetched it);
 *   active → first text: that round trip, the worker's start and first event, the API's relay,
 *     the client's read.
 * The first burst of each size warms sockets and code up and is left out of its size's figures;
 * the very first burst after start (cold code, new sockets) is reported apart. Writes
 * bench/results/burst-stages.json. Options: --sizes=1,10,100 --bursts=30,15,8 --pause-ms=200
 * (between bursts) --api-processes=N (default: one per core, as deployed).
 */
import { completionQueueName, completionQueuePrefix, workerQueueName } from '@app/contracts';
import { Queue } from 'bullmq';
import { readFileSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { REPO_ROOT } from '../../tools/local-stack/services';
import { stopEverythingOnSignals } from '../common/cleanup';
import { RequestMeter } from '../common/closed-loop';
import { numberOption, optionValue } from '../common/command-line';
import { streamCompletion, workloadRequests } from '../common/http-request';
import { ARTIFACTS_DIR, startServiceStack } from '../common/service-stack';
import { roundSummary, summarize } from '../common/stats';
import type { Summary } from '../common/stats';

const SIZES = (optionValue('sizes') ?? '1,10,100').split(',').map(Number);
const BURSTS = (optionValue('bursts') ?? '30,15,8').split(',').map(Number);
const API_PROCESSES = numberOption('api-processes', availableParallelism());
/** Idle time between bursts: the service goes quiet, as between bursts of real traffic. */
const PAUSE_MS = numberOption('pause-ms', 200);
const ENGINE = { kind: 'synthetic', tokens: 64, tokenIntervalMs: 10, slots: 20_000, contextSize: 4096 } as const;
const LABEL = 'burst';
const REQUEST_TIMEOUT_MS = 60_000;
const LOG_WRITE_MS = 200;
/** The API keeps a queue's last 1,000 finished jobs (completion-queues.ts), and a size's jobs are read after its last burst. */
const FINISHED_JOBS_KEPT = 1000;
const sleep = (ms: number): Promise<void> => new Promise((resolve_) => setTimeout(resolve_, ms));

const STAGES = ['client → API', 'API → queued', 'queued → active', 'active → first text', 'time to first text'] as const;
type Stage = (typeof STAGES)[number];

/** One streamed request as the client saw it: the API's request id, and epoch times on the clock every process shares. */
interface ClientSide {
  requestId: string;
  sentAt: number;
  firstTextAt: number;
}

/** What the API's request log says of a request: its completion, and when it arrived (its onRequest). */
interface LoggedRequest {
  completionId: string;
  arrivedAt: number;
}

/** A request's stage boundaries: sent, arrived, added to the queue (BullMQ's `timestamp`), moved to active (`processedOn`), first text. */
interface Measured extends ClientSide, LoggedRequest {
  queuedAt: number;
  activeAt: number;
}

const epochMs = (performanceNow: number): number => performance.timeOrigin + performanceNow;

/** Streams one answer to its end through the load generator's own client (`[DONE]`, usage, no error event). */
async function streamOne(workloadRequest: ReturnType<typeof workloadRequests>, agent: Agent, index: number): Promise<ClientSide> {
  const meter = new RequestMeter();
  let requestId = '';
  const chat = workloadRequest(index, {
    maxTokens: ENGINE.tokens,
    stream: true,
    agent,
    timeoutMs: REQUEST_TIMEOUT_MS,
    onHeaders: (headers) => (requestId = String(headers['x-request-id'])),
  });
  await streamCompletion(chat, meter);
  return { requestId, sentAt: epochMs(meter.startedAt), firstTextAt: epochMs(meter.firstContentAt) };
}

/** The API's request log (one line per request, written when its response has closed), by request id. */
function apiRequestLog(): Map<string, LoggedRequest> {
  const requests = new Map<string, LoggedRequest>();
  for (const line of readFileSync(resolve(ARTIFACTS_DIR, 'logs', `${LABEL}-api.log`), 'utf8').split('\n')) {
    if (!line.includes('"completionId"')) continue;
    const entry = JSON.parse(line) as { requestId: string; completionId: string; time: number; totalMs: number };
    requests.set(entry.requestId, { completionId: entry.completionId, arrivedAt: entry.time - entry.totalMs });
  }
  return requests;
}

/** Joins each request to its log line and its job, read at once: the queue keeps only the last 1,000 finished jobs. */
async function measure(queues: Queue[], sides: ClientSide[]): Promise<Measured[]> {
  const log = apiRequestLog();
  const jobOf = async (id: string) => (await Promise.all(queues.map((queue) => queue.getJob(id)))).find((job) => job !== undefined);
  return Promise.all(
    sides.map(async (side) => {
      const logged = log.get(side.requestId);
      const job = logged && (await jobOf(logged.completionId));
      if (!logged || !job?.processedOn) throw new Error(`no request log line or finished job for request ${side.requestId}`);
      return { ...side, ...logged, queuedAt: job.timestamp, activeAt: job.processedOn };
    }),
  );
}

interface SizeResult {
  burstSize: number;
  bursts: number;
  stagesMs: Record<Stage, Summary>;
}

/** Each request's time in every stage, summarised. */
function stagesOf(requests: Measured[]): Record<Stage, Summary> {
  const samples = Object.fromEntries(STAGES.map((stage) => [stage, [] as number[]])) as Record<Stage, number[]>;
  for (const request_ of requests) {
    samples['client → API'].push(request_.arrivedAt - request_.sentAt);
    samples['API → queued'].push(request_.queuedAt - request_.arrivedAt);
    samples['queued → active'].push(request_.activeAt - request_.queuedAt);
    samples['active → first text'].push(request_.firstTextAt - request_.activeAt);
    samples['time to first text'].push(request_.firstTextAt - request_.sentAt);
  }
  return Object.fromEntries(STAGES.map((stage) => [stage, roundSummary(summarize(samples[stage]))])) as Record<Stage, Summary>;
}

/** Bursts of each size, the warm-up included; refused before anything starts when the queue would not keep their jobs. */
function plannedBursts(): Array<{ size: number; bursts: number }> {
  return SIZES.map((size, index) => {
    const bursts = BURSTS[index] ?? BURSTS.at(-1) ?? 8;
    if ((bursts + 1) * size > FINISHED_JOBS_KEPT)
      throw new Error(`${bursts} bursts of ${size} are more jobs than the queue keeps (${FINISHED_JOBS_KEPT}): ask for fewer`);
    return { size, bursts };
  });
}

async function main(): Promise<void> {
  const plan = plannedBursts();
  stopEverythingOnSignals();
  const stack = await startServiceStack(LABEL, ENGINE, API_PROCESSES);
  // The model's queue, and its worker's own, where prefix-cache affinity places a job.
  const queues = [completionQueueName(stack.target.model), workerQueueName(stack.target.model, `bench-${LABEL}`)].map(
    (name) => new Queue(name, { connection: { url: stack.redisUrl }, prefix: completionQueuePrefix(stack.target.model) }),
  );
  const agent = new Agent({ keepAlive: true, maxSockets: Infinity });
  const workloadRequest = workloadRequests(stack.target);
  const measured = new Map<number, Measured[]>();
  let firstSides: ClientSide[] = [];
  try {
    for (const { size, bursts } of plan) {
      const sides: ClientSide[] = [];
      for (let burst = 0; burst <= bursts; burst++) {
        const answered = await Promise.all(Array.from({ length: size }, (_, request_) => streamOne(workloadRequest, agent, request_)));
        if (burst > 0) sides.push(...answered);
        else if (measured.size === 0 && firstSides.length === 0) firstSides = answered;
        await sleep(PAUSE_MS);
      }
      // The API writes a request's log line once its response has closed, through a pipe to the log file.
      await sleep(LOG_WRITE_MS);
      measured.set(size, await measure(queues, sides));
    }
    const firstBurst = { burstSize: firstSides.length, stagesMs: stagesOf(await measure(queues, firstSides)) };
    print(firstBurst.burstSize, firstBurst.stagesMs, 'the first burst after start');
    const results: SizeResult[] = [];
    for (const [burstSize, requests] of measured) {
      const stagesMs = stagesOf(requests);
      results.push({ burstSize, bursts: requests.length / burstSize, stagesMs });
      print(burstSize, stagesMs);
    }
    const file = resolve(REPO_ROOT, 'bench/results/burst-stages.json');
    const settings = { cpus: availableParallelism(), apiProcesses: API_PROCESSES, pauseMs: PAUSE_MS, engine: ENGINE };
    writeFileSync(file, `${JSON.stringify({ date: new Date().toISOString(), settings, firstBurst, results }, null, 2)}\n`);
    console.log(`wrote ${file}`);
  } finally {
    agent.destroy();
    await Promise.all(queues.map((queue) => queue.close()));
    await stack.stop();
  }
}

function print(burstSize: number, stages: Record<Stage, Summary>, which = 'warm bursts'): void {
  console.log(`\n${burstSize} stream${burstSize === 1 ? '' : 's'} at once, ${which} (ms)      p50     p95     max`);
  for (const stage of STAGES) {
    const { p50, p95, max } = stages[stage];
    console.log(`  ${stage.padEnd(22)} ${[p50, p95, max].map((value) => value.toFixed(1).padStart(7)).join(' ')}`);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
