import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { ModelsModule } from '../models/models.module';
import { CompletionQueuesModule } from '../pipeline/completion-queues.module';
import { ApiMetrics } from './api-metrics';
import { HealthController } from './health.controller';
import { MetricsController } from './metrics.controller';

/** Operators' view of an instance: its metrics (`/metrics`) and its health (`/health`). */
@Module({
  imports: [TerminusModule.forRoot(), CompletionQueuesModule, ModelsModule],
  controllers: [HealthController, MetricsController],
  providers: [ApiMetrics],
  exports: [ApiMetrics],
})
export class ObservabilityModule {}
