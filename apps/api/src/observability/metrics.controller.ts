import { Controller, Get, Headers, Res } from '@nestjs/common';
import { ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import { ApiEnv, MetricsToken } from '@app/config';
import type { FastifyReply } from 'fastify';
import { OpenAiError } from '../errors/openai-error';
import { ApiMetrics } from './api-metrics';

/**
 * Prometheus scrape endpoint. Never an API key: open while METRICS_TOKEN is unset (keep it on
 * the operators' network), else it answers only `Authorization: Bearer <METRICS_TOKEN>`.
 */
@ApiTags('operations')
@Controller('metrics')
export class MetricsController {
  private readonly token: MetricsToken;

  constructor(
    private readonly metrics: ApiMetrics,
    env: ApiEnv,
  ) {
    this.token = new MetricsToken(env.METRICS_TOKEN);
  }

  @Get()
  @ApiOperation({
    summary: 'Prometheus metrics of this API instance, all its processes (text exposition format); needs METRICS_TOKEN as a Bearer token when one is set.',
  })
  @ApiProduces('text/plain')
  async scrape(@Headers('authorization') authorization: string | undefined, @Res({ passthrough: true }) reply: FastifyReply): Promise<string> {
    if (!this.token.accepts(authorization)) {
      throw new OpenAiError(
        401,
        'invalid_request_error',
        'Metrics need the metrics token (Authorization: Bearer METRICS_TOKEN).',
        null,
        'invalid_metrics_token',
        {
          'www-authenticate': 'Bearer realm="metrics"',
        },
      );
    }
    const body = await this.metrics.scrape();
    void reply.header('content-type', this.metrics.registry.contentType).header('cache-control', 'no-store');
    return body;
  }
}
