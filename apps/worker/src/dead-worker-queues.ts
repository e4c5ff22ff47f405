import { Inject, Injectable, Logger } from '@nestjs/common';
import type { OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { WorkerEnv } from '@app/config';
import { ANNOUNCE_INTERVAL_MS, ANNOUNCEMENT_TTL_MS, completionQueueName, completionQueuePrefix, workerQueueName, workerQueuesKey } from '@app/contracts';
import type { CompletionJobData, CompletionResult } from '@app/contracts';
import { Queue } from 'bullmq';
import type { Job } from 'bullmq';
import type { RedisClient } from '@app/redis';
import { WorkerMetrics } from './observability/worker-metrics';
import { PUBLISHER_REDIS } from './worker-redis.providers';

type CompletionQueue = Queue<CompletionJobData, CompletionResult>;
type CompletionJob = Job<CompletionJobData, CompletionResult>;

/** A dead worker's own queue holds at most its waiting and running jobs: a few, read in one go. */
const JOBS_PER_SWEEP = 200;
const UNFINISHED = ['wait', 'prioritized', 'active', 'delayed'] as const;

/**
 * Empties the own queues of the model's dead and draining workers into the model's shared queue.
 * A worker's own queue (prefix-cache affinity) has one consumer, its worker, and BullMQ finds a
 * stalled job only through the consumers of its queue: without this, a job a SIGKILLed worker had
 * started would stay active there for good. Each worker lists itself in workerQueuesKey, scored by
 * when it counts as gone (renewed every ANNOUNCE_INTERVAL_MS, as the registry is; now, once it drains).
 * Every interval one worker of the model (a lease in Redis picks it) moves each job of a gone
 * worker's queue to the shared queue: remove, then add with the same id. BullMQ removes a job only
 * while no worker holds its lock, so a job still running (a draining worker's) stays where it is
 * and a started job moves only once its dead worker's lock has expired: it runs on one worker at a
 * time. A started job keeps counting its attempts (attemptsBefore), so the API tells the new
 * attempt from the dead one's events, as it does for a stalled job of the shared queue: a
 * non-streamed answer is retried unseen, a stream that had sent output ends in worker_lost.
 * A gone worker's queue with nothing left to run is deleted, with its finished jobs' records,
 * GONE_WORKER_QUEUE_KEEP_MS after it went.
 */
@Injectable()
export class DeadWorkerQueues implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(DeadWorkerQueues.name);
  private readonly listKey: string;
  private readonly shared: CompletionQueue;
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> = Promise.resolve();
  private inSweep = false;

  constructor(
    private readonly env: WorkerEnv,
    @Inject(PUBLISHER_REDIS) private readonly redis: RedisClient,
    private readonly metrics: WorkerMetrics,
  ) {
    this.listKey = workerQueuesKey(env.MODEL_NAME);
    this.shared = this.open(completionQueueName(env.MODEL_NAME));
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.listSelf();
    this.timer = setInterval(() => {
      if (this.inSweep) return;
      this.inSweep = true;
      this.sweeping = this.tick()
        .catch((error: Error) => this.logger.warn(`own queues of gone workers not swept: ${error.message}`))
        .finally(() => (this.inSweep = false));
    }, ANNOUNCE_INTERVAL_MS);
    this.timer.unref();
  }

  /** Draining: the other workers move what waits in this worker's queue at once; its running jobs finish here. */
  async onModuleDestroy(): Promise<void> {
    clearInterval(this.timer);
    await this.sweeping;
    await this.redis.zadd(this.listKey, Date.now(), this.env.WORKER_ID).catch(() => undefined);
    await this.shared.close();
  }

  private listSelf(): Promise<number> {
    return this.redis.zadd(this.listKey, Date.now() + ANNOUNCEMENT_TTL_MS, this.env.WORKER_ID);
  }

  private async tick(): Promise<void> {
    await this.listSelf();
    // One sweeper per model at a time; moving is safe twice over, but needs doing only once.
    if ((await this.redis.set(`${this.listKey}:sweeper`, this.env.WORKER_ID, 'PX', ANNOUNCE_INTERVAL_MS, 'NX')) !== 'OK') return;
    const gone = await this.redis.zrangebyscore(this.listKey, '-inf', Date.now(), 'WITHSCORES');
    for (let index = 0; index < gone.length; index += 2) {
      if (gone[index] !== this.env.WORKER_ID) await this.empty(gone[index], Number(gone[index + 1]));
    }
  }

  /** Moves what a gone worker's queue holds; deletes the queue once nothing in it is left to run and its keeping time is over. */
  private async empty(workerId: string, goneAt: number): Promise<void> {
    const queue = this.open(workerQueueName(this.env.MODEL_NAME, workerId));
    try {
      for (const job of await queue.getJobs([...UNFINISHED], 0, JOBS_PER_SWEEP)) await this.move(queue, job);
      if (Date.now() - goneAt < this.env.GONE_WORKER_QUEUE_KEEP_MS || (await queue.getJobCountByTypes(...UNFINISHED)) > 0) return;
      // Not if it came back meanwhile (a worker restarted under the same id): its queue is live again.
      const listedUntil = await this.redis.zscore(this.listKey, workerId);
      if (listedUntil !== null && Number(listedUntil) > Date.now()) return;
      await queue.obliterate();
      await this.redis.zrem(this.listKey, workerId);
      this.logger.log(`own queue of gone worker ${workerId} emptied and deleted`);
    } finally {
      await queue.close();
    }
  }

  private async move(queue: CompletionQueue, job: CompletionJob): Promise<void> {
    if (job.id === undefined) return;
    // 0: a worker holds its lock (it runs there still), or it has gone (finished, cancelled, moved).
    if ((await queue.remove(job.id)) !== 1) return;
    // Its payload as stored (a worker decodes it when it runs): only the schedule gains the count.
    const schedule = job.data.schedule as Partial<CompletionJobData['schedule']> | undefined;
    const attemptsBefore = (typeof schedule?.attemptsBefore === 'number' ? schedule.attemptsBefore : 0) + job.attemptsStarted;
    const data = (attemptsBefore > 0 && schedule ? { ...job.data, schedule: { ...schedule, attemptsBefore } } : job.data) as CompletionJobData;
    const { priority, removeOnComplete, removeOnFail } = job.opts;
    try {
      await this.shared.add(job.name, data, { jobId: job.id, attempts: 1, ...(priority ? { priority } : {}), removeOnComplete, removeOnFail });
    } catch (error) {
      // Removed and not re-added: its API answers no_capacity when the job does not start in time.
      this.logger.error(`job ${job.id} lost moving from ${queue.name}: ${error instanceof Error ? error.message : String(error)}`);
      return;
    }
    this.metrics.jobsMovedFromGoneWorkers.inc({ model: this.env.MODEL_NAME, started: String(job.attemptsStarted > 0) });
    this.logger.warn(`job ${job.id} moved from ${queue.name} to the shared queue (${job.attemptsStarted > 0 ? 'started there' : 'waiting'})`);
  }

  private open(name: string): CompletionQueue {
    return new Queue<CompletionJobData, CompletionResult>(name, { connection: this.redis, prefix: completionQueuePrefix(this.env.MODEL_NAME) });
  }
}
