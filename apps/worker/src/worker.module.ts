import { Inject, Injectable, Module } from '@nestjs/common';
import type { DynamicModule, OnApplicationShutdown } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { WorkerEnv } from '@app/config';
import { CompletionCancellations } from './completion-cancellations';
import { CompletionProcessor } from './completion.processor';
import { DeadWorkerQueues } from './dead-worker-queues';
import { WorkerAnnouncer } from './worker-announcer';
import { INFERENCE_ENGINE } from './engine/inference-engine';
import type { InferenceEngine } from './engine/inference-engine';
import { loadEngine } from './engine/engine-registry';
import { workerRedisProviders } from './worker-redis.providers';
import { ObservedEngine } from './observability/observed-engine';
import { QueueWorkerMonitor } from './observability/queue-worker-monitor';
import { WorkerHealth } from './observability/worker-health';
import { workerHttpServerProvider } from './observability/worker-http-server';
import { WorkerMetrics } from './observability/worker-metrics';

/** Unloads the model at shutdown, after the processor has let its jobs finish (onModuleDestroy). */
@Injectable()
class EngineCloser implements OnApplicationShutdown {
  constructor(@Inject(INFERENCE_ENGINE) private readonly engine: InferenceEngine) {}

  async onApplicationShutdown(): Promise<void> {
    await this.engine.close();
  }
}

@Module({})
export class WorkerModule {
  /** The environment is validated once in main.ts and handed in here. */
  static register(env: WorkerEnv): DynamicModule {
    return {
      module: WorkerModule,
      imports: [TerminusModule.forRoot()],
      providers: [
        { provide: WorkerEnv, useValue: env },
        {
          provide: INFERENCE_ENGINE,
          inject: [WorkerEnv, WorkerMetrics],
          // Measured from the outside (slots, time to first token, tokens): see observability/.
          useFactory: async (env: WorkerEnv, metrics: WorkerMetrics) => new ObservedEngine(await loadEngine(env), metrics),
        },
        // The same instance by its class, for what reads its slot counts (the registry announcer).
        { provide: ObservedEngine, useExisting: INFERENCE_ENGINE },
        ...workerRedisProviders(env),
        CompletionCancellations,
        WorkerAnnouncer,
        CompletionProcessor,
        DeadWorkerQueues,
        EngineCloser,
        // Operators' view: metrics, health and their HTTP port.
        WorkerMetrics,
        QueueWorkerMonitor,
        WorkerHealth,
        workerHttpServerProvider,
      ],
    };
  }
}
