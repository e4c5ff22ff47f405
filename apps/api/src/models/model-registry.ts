import { Inject, Injectable, Logger } from '@nestjs/common';
import type { OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import { WORKER_REGISTRY_KEYS, parseWorkerAnnouncement } from '@app/contracts';
import type { WorkerAnnouncement } from '@app/contracts';
import type { RedisClient } from '@app/redis';
import { COMMANDS_REDIS } from '../redis/api-redis.module';

/** How often the API re-reads the registry: requests check a local copy, not Redis. */
const REFRESH_MS = 1000;

export interface ServedModel {
  id: string;
  /** Live workers serving it now; a configured model may have none (it waits for one). */
  workers: WorkerAnnouncement[];
}

/**
 * Which models this API serves: the configured ones (MODELS, which may scale up from zero
 * workers) and every model a live worker announces. Anything else is 404.
 */
@Injectable()
export class ModelRegistry implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(ModelRegistry.name);
  private live = new Map<string, WorkerAnnouncement[]>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly env: ApiEnv,
    @Inject(COMMANDS_REDIS) private readonly redis: RedisClient,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.refresh().catch((error: Error) => this.logger.warn(`registry not read: ${error.message}`));
    this.timer = setInterval(() => {
      this.refresh().catch(() => undefined); // Redis away: keep the last view, health reports the outage
    }, REFRESH_MS);
    this.timer.unref();
  }

  onApplicationShutdown(): void {
    clearInterval(this.timer);
  }

  serves(model: string): boolean {
    return this.env.MODELS.includes(model) || this.live.has(model);
  }

  /** The workers announcing `model` now; empty while it waits for its first one. */
  liveWorkers(model: string): WorkerAnnouncement[] {
    return this.live.get(model) ?? [];
  }

  list(): ServedModel[] {
    const ids = new Set([...this.env.MODELS, ...this.live.keys()]);
    return [...ids].sort().map((id) => ({ id, workers: this.live.get(id) ?? [] }));
  }

  /** Reads live workers and drops the expired ones (whichever API gets there first). */
  async refresh(): Promise<void> {
    const now = Date.now();
    const { expiries, announcements } = WORKER_REGISTRY_KEYS;
    const expired = await this.redis.zrangebyscore(expiries, '-inf', now);
    if (expired.length > 0) {
      await this.redis.multi().zremrangebyscore(expiries, '-inf', now).hdel(announcements, ...expired).exec();
    }
    const alive = await this.redis.zrangebyscore(expiries, now, '+inf');
    const entries = alive.length > 0 ? await this.redis.hmget(announcements, ...alive) : [];
    const live = new Map<string, WorkerAnnouncement[]>();
    for (const entry of entries) {
      // Another version's entry, or a corrupt one, is skipped: it must not hide the others.
      const announcement = entry ? parseWorkerAnnouncement(entry) : undefined;
      if (!announcement) continue;
      live.set(announcement.model, [...(live.get(announcement.model) ?? []), announcement]);
    }
    this.live = live;
  }
}
