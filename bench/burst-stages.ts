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
 * The first burst of each size warms sockets and code up and is left out. Writes
 * bench/results/burst-stages.json. Options: --sizes=1,10,100 --bursts=30,15,8 --pause-ms=200
 * (between bursts) --api-processes=N (default: one per core, as deployed).
 */
import { completionQueueName, completionQueuePrefix } from '@app/contracts';
import { Queue } from 'bullmq';
import { readFileSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { REPO_ROOT } from '../tools/local-stack/services';
import { stopEverythingOnSignals } from './cleanup';
import type { HttpTarget } from './driver-protocol';
import { ARTIFACTS_DIR, startServiceStack } from './service-stack';
import { round, summarize } from './stats';
import type { Summary } from './stats';
import { requestBody } from './workload';

const option = (name: string, fallback: string): string => process.argv.find((arg) => arg.startsWith(`--${name}=`))?.split('=')[1] ?? fallback;
const SIZES = option('sizes', '1,10,100').split(',').map(Number);
const BURSTS = option('bursts', '30,15,8').split(',').map(Number);
const API_PROCESSES = Number(option('api-processes', String(availableParallelism())));
/** Idle time between bursts: the service goes quiet, as between bursts of real traffic. */
const PAUSE_MS = Number(option('pause-ms', '200'));
const ENGINE = { kind: 'synthetic', tokens: 64, tokenIntervalMs: 10, slots: 20_000, contextSize: 4096 } as const;
const LABEL = 'burst';
const REQUEST_TIMEOUT_MS = 60_000;

const STAGES = ['client → API', 'API → queued', 'queued → active', 'active → first text', 'time to first text'] as const;
type Stage = (typeof STAGES)[number];

/** One streamed request as the client saw it (Date.now() times, the clock every process shares). */
interface ClientSide {
  completionId: string;
  sentAt: number;
  firstTextAt: number;
}

/** A request with its job's times: added to the queue (BullMQ's `timestamp`) and moved to active (`processedOn`). */
interface Measured extends ClientSide {
  queuedAt: number;
  activeAt: number;
}

async function withJobTimes(queue: Queue, side: ClientSide): Promise<Measured> {
  const job = await queue.getJob(side.completionId);
  if (!job?.processedOn) throw new Error(`no finished job ${side.completionId}`);
  return { ...side, queuedAt: job.timestamp, activeAt: job.processedOn };
}

/** Streams one answer to its end (`[DONE]`, no error event); the completion id and the first text's time come from its frames. */
function streamOne(target: HttpTarget, agent: Agent, index: number): Promise<ClientSide> {
  const body = requestBody(index, target.model, ENGINE.tokens, true);
  return new Promise((resolve_, reject) => {
    const sentAt = Date.now();
    const req = request(new URL(`${target.baseUrl}/chat/completions`), {
      method: 'POST',
      agent,
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      headers: { authorization: `Bearer ${target.apiKey}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    });
    req.on('response', (response) => {
      if (response.statusCode !== 200) return reject(new Error(`HTTP ${response.statusCode}`));
      let completionId = '';
      let firstTextAt = 0;
      let done = false;
      let pending = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        pending += chunk;
        const frames = pending.split('\n\n');
        pending = frames.pop() ?? '';
        for (const frame of frames) {
          if (frame.startsWith('data: {"error"')) return reject(new Error(frame.slice(6, 300)));
          if (frame === 'data: [DONE]') done = true;
          completionId ||= /"id":"(chatcmpl-[^"]+)"/.exec(frame)?.[1] ?? '';
          if (!firstTextAt && frame.includes('"delta":{"content":"')) firstTextAt = Date.now();
        }
      });
      response.on('end', () => (done && completionId && firstTextAt ? resolve_({ completionId, sentAt, firstTextAt }) : reject(new Error('a stream without text or [DONE]'))));
      response.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** When each completion's request reached the API, from the API's request log (one line per request). */
function arrivalsInApiLog(): Map<string, number> {
  const arrivals = new Map<string, number>();
  for (const line of readFileSync(resolve(ARTIFACTS_DIR, 'logs', `${LABEL}-api.log`), 'utf8').split('\n')) {
    if (!line.includes('"completionId"')) continue;
    const entry = JSON.parse(line) as { completionId: string; time: number; totalMs: number };
    arrivals.set(entry.completionId, entry.time - entry.totalMs);
  }
  return arrivals;
}

interface SizeResult {
  burstSize: number;
  bursts: number;
  stagesMs: Record<Stage, Summary>;
}

async function main(): Promise<void> {
  stopEverythingOnSignals();
  const stack = await startServiceStack(LABEL, ENGINE, API_PROCESSES);
  const queue = new Queue(completionQueueName(stack.target.model), { connection: { url: stack.redisUrl }, prefix: completionQueuePrefix(stack.target.model) });
  const agent = new Agent({ keepAlive: true, maxSockets: Infinity });
  const measured = new Map<number, Measured[]>();
  try {
    for (const [index, size] of SIZES.entries()) {
      const bursts = BURSTS[index] ?? BURSTS.at(-1) ?? 8;
      const requests: Measured[] = [];
      for (let burst = 0; burst <= bursts; burst++) {
        const answered = await Promise.all(Array.from({ length: size }, (_, request_) => streamOne(stack.target, agent, request_)));
        // Read at once: the queue keeps only the last 1,000 finished jobs.
        if (burst > 0) requests.push(...(await Promise.all(answered.map((side) => withJobTimes(queue, side)))));
        await new Promise((resolve_) => setTimeout(resolve_, PAUSE_MS));
      }
      measured.set(size, requests);
    }
    // The API writes a request's log line when its response has closed: all have by now.
    const arrivals = arrivalsInApiLog();
    const results: SizeResult[] = [];
    for (const [burstSize, requests] of measured) {
      const samples = Object.fromEntries(STAGES.map((stage) => [stage, [] as number[]])) as Record<Stage, number[]>;
      for (const side of requests) {
        const arrivedAt = arrivals.get(side.completionId);
        if (arrivedAt === undefined) throw new Error(`no request log line for ${side.completionId}`);
        samples['client → API'].push(arrivedAt - side.sentAt);
        samples['API → queued'].push(side.queuedAt - arrivedAt);
        samples['queued → active'].push(side.activeAt - side.queuedAt);
        samples['active → first text'].push(side.firstTextAt - side.activeAt);
        samples['time to first text'].push(side.firstTextAt - side.sentAt);
      }
      const stagesMs = Object.fromEntries(STAGES.map((stage) => [stage, roundSummary(summarize(samples[stage]))])) as Record<Stage, Summary>;
      results.push({ burstSize, bursts: requests.length / burstSize, stagesMs });
      print(burstSize, stagesMs);
    }
    const file = resolve(REPO_ROOT, 'bench/results/burst-stages.json');
    const settings = { cpus: availableParallelism(), apiProcesses: API_PROCESSES, pauseMs: PAUSE_MS, engine: ENGINE };
    writeFileSync(file, `${JSON.stringify({ date: new Date().toISOString(), settings, results }, null, 2)}\n`);
    console.log(`wrote ${file}`);
  } finally {
    agent.destroy();
    await queue.close();
    await stack.stop();
  }
}

function roundSummary({ count, mean, p50, p95, p99, max }: Summary): Summary {
  return { count, mean: round(mean, 1), p50: round(p50, 1), p95: round(p95, 1), p99: round(p99, 1), max: round(max, 1) };
}

function print(burstSize: number, stages: Record<Stage, Summary>): void {
  console.log(`\n${burstSize} stream${burstSize === 1 ? '' : 's'} at once (ms)      p50     p95     max`);
  for (const stage of STAGES) {
    const { p50, p95, max } = stages[stage];
    console.log(`  ${stage.padEnd(22)} ${[p50, p95, max].map((value) => value.toFixed(1).padStart(7)).join(' ')}`);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
