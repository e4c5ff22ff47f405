import { Controller, Get, Res } from '@nestjs/common';
import { ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { ApiMetrics } from './api-metrics';

/** Prometheus scrape endpoint; no API key (keep it on the operators' network). */
@ApiTags('operations')
@Controller('metrics')
export class MetricsController {
  constructor(private readonly metrics: ApiMetrics) {}

  @Get()
  @ApiOperation({ summary: 'Prometheus metrics of this API instance (text exposition format).' })
  @ApiProduces('text/plain')
  async scrape(@Res({ passthrough: true }) reply: FastifyReply): Promise<string> {
    const body = await this.metrics.registry.metrics();
    void reply.header('content-type', this.metrics.registry.contentType).header('cache-control', 'no-store');
    return body;
  }
}
