import { Controller, Get, Inject, Res, ServiceUnavailableException } from '@nestjs/common';
import { HealthCheckService, HealthIndicatorService } from '@nestjs/terminus';
import type { HealthCheckResult } from '@nestjs/terminus';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { redisPing } from '@app/redis';
import type { RedisClient } from '@app/redis';
import { COMMANDS_REDIS, SUBSCRIBER_REDIS } from '../redis/api-redis.module';

const LIVE: HealthCheckResult = { status: 'ok', info: {}, error: {}, details: {} };

/**
 * Probes for load balancers and orchestrators; no API key. `live`: the process answers HTTP,
 * draining included (an orchestrator must let it finish its open requests). `ready`: it can serve
 * completions: Redis answers on the command connection, the event subscriber is connected, and
 * the instance is not shutting down; 503 with Terminus's report when it is not (`shutting_down`
 * from SIGTERM on, set with admission's refusal in beforeApplicationShutdown). While it drains
 * it listens no more: a new connection is refused, and one still open gets that 503.
 */
@ApiTags('operations')
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly indicators: HealthIndicatorService,
    @Inject(COMMANDS_REDIS) private readonly commands: RedisClient,
    @Inject(SUBSCRIBER_REDIS) private readonly subscriber: RedisClient,
  ) {}

  @Get('live')
  @ApiOperation({ summary: 'Liveness: the process answers HTTP (200 while it drains too).' })
  live(@Res({ passthrough: true }) reply: FastifyReply): HealthCheckResult {
    void reply.header('cache-control', 'no-store');
    return LIVE;
  }

  @Get('ready')
  @ApiOperation({ summary: 'Readiness: Redis reachable, event subscriber connected, not shutting down; 503 otherwise.' })
  ready(@Res({ passthrough: true }) reply: FastifyReply): Promise<HealthCheckResult> {
    return report(
      reply,
      this.health.check([
        () => redisPing(this.indicators, this.commands),
        () => {
          const events = this.indicators.check('events');
          return this.subscriber.status === 'ready' ? events.up() : events.down({ connection: this.subscriber.status });
        },
      ]),
    );
  }
}

/** Terminus throws its report inside a 503; it is sent as it is, not turned into an OpenAI error. */
async function report(reply: FastifyReply, check: Promise<HealthCheckResult>): Promise<HealthCheckResult> {
  void reply.header('cache-control', 'no-store');
  try {
    return await check;
  } catch (error) {
    if (!(error instanceof ServiceUnavailableException)) throw error;
    void reply.status(503);
    return error.getResponse() as HealthCheckResult;
  }
}
