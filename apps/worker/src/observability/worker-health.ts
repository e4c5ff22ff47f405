import { Inject, Injectable, ServiceUnavailableException } from '@nestjs/common';
import { WorkerEnv } from '@app/config';
import { HealthCheckService, HealthIndicatorService } from '@nestjs/terminus';
import type { HealthCheckResult } from '@nestjs/terminus';
import { redisPing } from '@app/redis';
import type { RedisClient } from '@app/redis';
import { INFERENCE_ENGINE } from '../engine/inference-engine';
import type { InferenceEngine } from '../engine/inference-engine';
import { PUBLISHER_REDIS } from '../worker-redis.providers';
import { QueueWorkerMonitor } from './queue-worker-monitor';

const LIVE: HealthCheckResult = { status: 'ok', info: {}, error: {}, details: {} };

const DRAINING = { queue: { status: 'down' as const, message: 'draining: finishing its running jobs, taking no new ones' } };
const SHUTTING_DOWN: HealthCheckResult = { status: 'shutting_down', info: {}, error: DRAINING, details: DRAINING };

/**
 * The worker's health in Terminus's shape. Live: the process runs, draining included (an
 * orchestrator must let it finish its jobs). Ready: the model is loaded (this service exists only
 * once the engine has loaded it) and its engine answers (llama-server's /health), Redis answers, and the BullMQ worker is taking jobs; 503
 * `shutting_down` from the moment the worker starts to drain until it exits. Terminus's own
 * shutting_down comes only after every job has finished (beforeApplicationShutdown), too late.
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
    return Promise.resolve(LIVE);
  }

  ready(): Promise<HealthCheckResult> {
    if (this.queueWorker.isDraining) return Promise.reject(new ServiceUnavailableException(SHUTTING_DOWN));
    return this.health.check([
      async () => {
        const model = this.indicators.check('model');
        const down = await this.engine.unhealthy?.();
        return down === undefined ? model.up({ name: this.env.MODEL_NAME, slots: this.engine.slots }) : model.down(down);
      },
      () => redisPing(this.indicators, this.redis),
      () => {
        const queue = this.indicators.check('queue');
        return this.queueWorker.isRunning ? queue.up() : queue.down('the queue worker is not taking jobs');
      },
    ]);
  }
}
