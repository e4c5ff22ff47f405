import { Inject, Injectable } from '@nestjs/common';
import type { OnApplicationShutdown } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import { RESPONSE_LOOP_QUEUE_NAME, RESPONSE_LOOP_QUEUE_PREFIX, ResponseLoopJobName } from '@app/contracts';
import { closeRedis, createRedisConnection, QUEUE_WORKER_RETRY_DELAY_MS, redisTarget } from '@app/redis';
import type { RedisClient } from '@app/redis';
import { Queue, Worker } from 'bullmq';
import type { Processor } from 'bullmq';
import { API_INSTANCE_ID, COMMANDS_REDIS } from '../../redis/api-redis.module';
import type { CreateResponseDto } from './responses-request.dto';

/** An instance that dies carrying loops hands them to another within about twice this long. */
const LOOP_LOCK_MS = 5000;

/** Loops one instance carries at once: each mostly waits, on a model turn or a server's answer. */
const LOOPS_PER_INSTANCE = 256;

/** What the loops' queue holds of a background response with remote MCP tools (Bull Board shows it). */
export interface LoopJobData {
  id: string;
  owner: string;
  /** The request without its input (the record holds it) and without its MCP tools' credentials. */
  request: CreateResponseDto;
  /** Those credentials, sealed for the owner (CompactionSeal): nobody reads them off the queue. */
  credentials: string;
  /** The affinity key of the response it continues, which its turns keep. */
  continuedKey?: string;
  /** The service tier its first turn was granted. */
  tier?: string;
}

/** A running loop worker, and how it stops. */
export interface RunningLoopWorker {
  worker: Worker<LoopJobData>;
  /** Stops taking loops; those running are left to stall, so another instance carries them on. */
  close(): Promise<void>;
}

/**
 * The queue of background tool loops, one job per response (its id is the response id), taken
 * by the API instances. The job's lock lives while its instance does: when that instance dies,
 * BullMQ finds the job stalled and another instance takes it on from the response's step log.
 */
@Injectable()
export class ResponseLoopQueue implements OnApplicationShutdown {
  readonly queue: Queue<LoopJobData>;

  constructor(
    private readonly env: ApiEnv,
    @Inject(COMMANDS_REDIS) connection: RedisClient,
    @Inject(API_INSTANCE_ID) private readonly instanceId: string,
  ) {
    this.queue = new Queue<LoopJobData>(RESPONSE_LOOP_QUEUE_NAME, {
      connection,
      prefix: RESPONSE_LOOP_QUEUE_PREFIX,
      defaultJobOptions: { removeOnComplete: { age: 3600, count: 1000 }, removeOnFail: { age: 24 * 3600 }, attempts: 1 },
    });
  }

  /** Queues a response's loop; its id is the response id, so queuing it twice queues it once. */
  async start(data: LoopJobData): Promise<void> {
    await this.queue.add(ResponseLoopJobName.McpLoop, data, { jobId: data.id });
  }

  /** Takes loops on a blocking connection of its own, named after this instance (Bull Board's processedBy). */
  startWorker(carry: Processor<LoopJobData>): RunningLoopWorker {
    const blocking = createRedisConnection(redisTarget(this.env), 'blocking', `api-loops:${this.instanceId}`);
    const worker = new Worker<LoopJobData>(RESPONSE_LOOP_QUEUE_NAME, carry, {
      connection: blocking,
      prefix: RESPONSE_LOOP_QUEUE_PREFIX,
      name: this.instanceId,
      concurrency: LOOPS_PER_INSTANCE,
      lockDuration: LOOP_LOCK_MS,
      stalledInterval: LOOP_LOCK_MS,
      // A loop is carried on from its log after each instance lost under it, up to this many.
      maxStalledCount: 5,
      runRetryDelay: QUEUE_WORKER_RETRY_DELAY_MS,
    });
    return {
      worker,
      close: async () => {
        await worker.close(true);
        await closeRedis(blocking);
      },
    };
  }

  async onApplicationShutdown(): Promise<void> {
    await this.queue.close();
  }
}
