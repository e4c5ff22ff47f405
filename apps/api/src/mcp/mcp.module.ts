import { Module } from '@nestjs/common';
import { ApiMetrics } from '../observability/api-metrics';
import { ObservabilityModule } from '../observability/observability.module';
import { McpGateway } from './mcp-gateway';
import { McpMetrics } from './mcp-metrics';

/**
 * Remote MCP servers for the Responses door (McpGateway). ApiEnv comes from the global
 * ApiRedisModule; the metrics go to the API's registry.
 */
@Module({
  imports: [ObservabilityModule],
  providers: [{ provide: McpMetrics, useFactory: (metrics: ApiMetrics) => new McpMetrics(metrics.registry), inject: [ApiMetrics] }, McpGateway],
  exports: [McpGateway],
})
export class McpModule {}
