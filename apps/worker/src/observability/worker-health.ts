import { Inject, Injectable } from '@nestjs/common';
import { WorkerEnv } from '@app/config';
import { HealthCheckService, HealthIndicatorService } from '@nestjs/terminus';
import type { HealthCheckResult } from '@nestjs/terminus';
import { redisPing } from '@app/redis';
import type { RedisClient } from '@app/redis';
import { INFERENCE_ENGINE } from '../engine/inference-engine';
import type { InferenceEngine } from '../engine/inference-engine';
import { PUBLISHER_REDIS } from '../worker-redis.providers';
import { QueueWorkerMonitor } from './queue-worker-monitor';

/**
 * The worker's health as Terminus reports it. Live: the process runs. Ready: the model is loaded
 * (this service exists only once the engine has loaded it), Redis answers, and the BullMQ worker
 * is taking jobs. Both turn to 503 (`shutting_down`) once the worker starts to drain.
 */
@Injectable()
export class WorkerHealth {
  constructor(
    private readonly env: WorkerEnv,
    private readonly health: HealthCheckService,
    private readonly indicators: HealthIndicatorService,
    @Inject(INFERENCE_ENGINE) private readonly engine: InferenceEngine,
    @Inject(PUBLISHER_REDIS) private readonly redis: RedisClient,
    private readonly queueWorker: QueueWorkerMonitor,
  ) {}

  live(): Promise<HealthCheckResult> {
    return this.health.check([]);
  }

  ready(): Promise<HealthCheckResult> {
    return this.health.check([
      () => this.indicators.check('model').up({ name: this.env.MODEL_NAME, slots: this.engine.slots }),
      () => redisPing(this.indicators, this.redis),
      () => {
        const queue = this.indicators.check('queue');
        return this.queueWorker.isRunning ? queue.up() : queue.down('the queue worker is not taking jobs');
      },
    ]);
  }
}
