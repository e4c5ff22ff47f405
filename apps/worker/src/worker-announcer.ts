import { Inject, Injectable, Logger } from '@nestjs/common';
import type { OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { WorkerEnv } from '@app/config';
import { ANNOUNCEMENT_TTL_MS, ANNOUNCE_INTERVAL_MS, WORKER_REGISTRY_KEYS } from '@app/contracts';
import type { WorkerAnnouncement } from '@app/contracts';
import type { RedisClient } from '@app/redis';
import { ObservedEngine } from './observability/observed-engine';
import { PUBLISHER_REDIS } from './worker-redis.providers';

/**
 * Keeps this worker in the live model registry: its model, engine and free slots, renewed every
 * ANNOUNCE_INTERVAL_MS. A worker that dies simply stops renewing and drops out; one that shuts
 * down takes itself out at once, so APIs stop listing a model nobody serves.
 */
@Injectable()
export class WorkerAnnouncer implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(WorkerAnnouncer.name);
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly env: WorkerEnv,
    private readonly engine: ObservedEngine,
    @Inject(PUBLISHER_REDIS) private readonly redis: RedisClient,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.announce();
    this.timer = setInterval(() => {
      this.announce().catch((error: Error) => this.logger.warn(`announcement failed: ${error.message}`));
    }, ANNOUNCE_INTERVAL_MS);
    this.timer.unref();
  }

  async onModuleDestroy(): Promise<void> {
    clearInterval(this.timer);
    await this.redis
      .multi()
      .zrem(WORKER_REGISTRY_KEYS.expiries, this.env.WORKER_ID)
      .hdel(WORKER_REGISTRY_KEYS.announcements, this.env.WORKER_ID)
      .exec()
      .catch(() => undefined);
  }

  private async announce(): Promise<void> {
    const now = Date.now();
    const announcement: WorkerAnnouncement = {
      workerId: this.env.WORKER_ID,
      model: this.env.MODEL_NAME,
      engine: this.engine.name,
      capabilities: this.engine.capabilities,
      slots: this.engine.slots,
      freeSlots: this.engine.freeSlots,
      contextSize: this.engine.contextSize,
      announcedAt: now,
    };
    await this.redis
      .multi()
      .zadd(WORKER_REGISTRY_KEYS.expiries, now + ANNOUNCEMENT_TTL_MS, this.env.WORKER_ID)
      .hset(WORKER_REGISTRY_KEYS.announcements, this.env.WORKER_ID, JSON.stringify(announcement))
      .exec();
  }
}
