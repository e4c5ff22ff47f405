import type { JobOf } from '@app/contracts';
import type { Job, Queue } from 'bullmq';
import { STACK_API_KEY, STACK_MODEL, ServiceStack, waitFor } from '../../test/support/service-stack';
import type { ManagedProcess } from '../../tools/local-stack/managed-process';
import { auditJobs } from './job-audit';
import { loadWithKills } from './load-with-kills';
import { checkRetriedAnswers } from './retried-answers';
import { buildReport } from './scale-out-report';
import type { ScaleOutReport, ScaleOutSetup } from './scale-out-report';
import { MAX_MAX_TOKENS, MIN_MAX_TOKENS, scaleWorkload } from './scale-workload';

export interface ScaleOutOptions {
  /** Names the log files in test-artifacts/logs. */
  name: string;
  requests: number;
  concurrency: number;
  /** No request starts after this long. */
  sendForMs: number;
  /** Each request must end within this, or it is a hang (lost). */
  requestTimeoutMs: number;
  /** Share of the requests that end before the kills. */
  killAfter: number;
  /** Bound on waiting for the queue to empty before the audit. */
  drainTimeoutMs: number;
  /** At most this many retried answers are asked again. */
  recheckLimit: number;
  log?: (line: string) => void;
}

const INSTANCES = 3;
const PARALLEL_SEQUENCES = 2;
const JOB_LOCK_MS = 2000;
const KILL_MOMENT_WAIT_MS = 5000;

/**
 * Waits (boundedly) until `worker` runs a job that `wanted` picks by its seed, and leaves the
 * worker frozen (SIGSTOP) holding it; false if none came. The kill is most telling mid-answer for
 * a client that can still get its answer whole: a non-stream request through a surviving API,
 * which a retry on another worker must complete. The tiny model ends a job within milliseconds,
 * so the worker is frozen first and the job's state read again: only a job still active on the
 * frozen worker is one that the kill will catch mid-answer.
 */
async function freezeMidAnswer(queue: Queue, worker: { id: string; process: ManagedProcess }, wanted: (seed: number) => boolean): Promise<boolean> {
  const heldByWorker = (job: Job<JobOf<'generate'>> | undefined): boolean => job?.processedBy === worker.id && wanted(job.data.options.sampling.seed);
  const caught = async (): Promise<boolean> => {
    const active = (await queue.getJobs(['active'])) as Array<Job<JobOf<'generate'>>>;
    const candidate = active.find(heldByWorker);
    if (!candidate?.id) return false;
    worker.process.child.kill('SIGSTOP');
    const [state, again] = await Promise.all([queue.getJobState(candidate.id), queue.getJob(candidate.id) as Promise<Job<JobOf<'generate'>> | undefined>]);
    if (state === 'active' && heldByWorker(again)) return true;
    worker.process.child.kill('SIGCONT');
    return false;
  };
  return waitFor('the worker to be mid-answer', caught, KILL_MOMENT_WAIT_MS).catch(() => false);
}

/**
 * Three API instances and three workers on one private Redis, under a mixed load spread over
 * the APIs; mid-load one API and one worker are SIGKILLed. Then BullMQ's record is audited
 * against what each client saw, and retried answers are compared with fresh ones.
 */
export async function runScaleOut(options: ScaleOutOptions): Promise<ScaleOutReport> {
  const log = options.log ?? (() => undefined);
  const stack = await ServiceStack.start({
    name: options.name,
    workers: INSTANCES,
    parallelSequences: PARALLEL_SEQUENCES,
    // The audit compares each answer with the text its job recorded: jobs must keep contents.
    workerEnv: { JOB_LOCK_MS: String(JOB_LOCK_MS), MAX_GENERATION_MS: '20000', RETAIN_CONTENT: 'true' },
    // The service's own waits end well inside the client's bound, so a bound hit is a real hang.
    // The audit and the mid-answer kill read the model's shared queue, so every job goes there:
    // with AFFINITY on, jobs also wait on workers' own queues (its e2e tests kill workers there).
    apiEnv: { MAX_QUEUE_WAIT_MS: String(Math.floor(options.requestTimeoutMs / 3)), AFFINITY: 'false' },
  });
  try {
    const apis = [stack.api];
    for (let index = 1; index < INSTANCES; index++) apis.push(await stack.addApi());
    const [killedApi, killedWorker] = [1, 1];
    const setup: ScaleOutSetup = {
      apis: INSTANCES,
      workers: INSTANCES,
      parallelSequences: PARALLEL_SEQUENCES,
      jobLockMs: JOB_LOCK_MS,
      requests: options.requests,
      concurrency: options.concurrency,
      requestTimeoutMs: options.requestTimeoutMs,
      maxTokens: [MIN_MAX_TOKENS, MAX_MAX_TOKENS],
      killed: { api: `api-${killedApi + 1}`, worker: `${options.name}-worker-${killedWorker + 1}` },
    };
    const queue = stack.queue();
    log(`stack up: ${apis.map((api) => api.baseUrl).join(' ')}; sending ${options.requests} requests`);

    const load = await loadWithKills({
      apiUrls: apis.map((api) => api.baseUrl),
      apiKey: STACK_API_KEY,
      requests: scaleWorkload(options.requests, STACK_MODEL),
      concurrency: options.concurrency,
      requestTimeoutMs: options.requestTimeoutMs,
      sendForMs: options.sendForMs,
      killAfterEnded: Math.floor(options.requests * options.killAfter),
      killedApi,
      kill: async (inFlight, sending) => {
        const midAnswer = await freezeMidAnswer(queue, { id: setup.killed.worker, process: stack.workers[killedWorker] }, (seed) => {
          const request = inFlight.get(seed);
          return request !== undefined && !request.request.stream && request.api !== killedApi;
        });
        sending();
        log(`SIGKILL ${setup.killed.api} and ${setup.killed.worker} (${midAnswer ? 'mid-answer' : 'no answer of a survivor in flight'})`);
        await Promise.all([apis[killedApi].process.stop('SIGKILL'), stack.workers[killedWorker].stop('SIGKILL')]);
      },
    });
    log(`load done: ${load.records.length} requests in ${Date.now() - load.startedAt} ms; auditing the queue`);

    await waitFor(
      'the queue to empty',
      async () => Object.values(await queue.getJobCounts('active', 'wait', 'delayed', 'prioritized')).every((n) => n === 0),
      options.drainTimeoutMs,
    ).catch(() => log('the queue did not empty in time; the audit counts what is left as unfinished'));
    const audit = await auditJobs(queue, load.records);
    const retriedAnswers = await checkRetriedAnswers(load.records, audit.retriedRequests, {
      baseUrl: apis[(killedApi + 1) % INSTANCES].baseUrl,
      apiKey: STACK_API_KEY,
      timeoutMs: options.requestTimeoutMs,
      limit: options.recheckLimit,
    });
    return buildReport(setup, load, audit, retriedAnswers);
  } finally {
    await stack.stop();
  }
}
