import { Inject, Injectable, Module } from '@nestjs/common';
import type { DynamicModule, OnApplicationShutdown } from '@nestjs/common';
import { WorkerEnv } from '@app/config';
import { CompletionProcessor } from './completion.processor';
import { INFERENCE_ENGINE } from './engine/inference-engine';
import type { InferenceEngine } from './engine/inference-engine';
import { LlamaCppEngine } from './engine/llama-cpp.engine';
import { WorkerRedisCloser, workerRedisProviders } from './worker-redis.providers';

/** Unloads the model at shutdown, after the processor has let its jobs finish (onModuleDestroy). */
@Injectable()
class EngineCloser implements OnApplicationShutdown {
  constructor(@Inject(INFERENCE_ENGINE) private readonly engine: InferenceEngine) {}

  async onApplicationShutdown(): Promise<void> {
    await this.engine.close();
  }
}

function loadEngine(env: WorkerEnv): Promise<InferenceEngine> {
  return LlamaCppEngine.load({
    modelPath: env.MODEL_PATH,
    parallelSequences: env.PARALLEL_SEQUENCES,
    threads: env.ENGINE_THREADS,
    contextSize: env.CONTEXT_SIZE,
    gpu: env.GPU === 'false' ? false : (env.GPU as 'auto' | 'cuda' | 'vulkan' | 'metal'),
  });
}

@Module({})
export class WorkerModule {
  /** The environment is validated once in main.ts and handed in here. */
  static register(env: WorkerEnv): DynamicModule {
    return {
      module: WorkerModule,
      providers: [
        { provide: WorkerEnv, useValue: env },
        { provide: INFERENCE_ENGINE, inject: [WorkerEnv], useFactory: loadEngine },
        ...workerRedisProviders,
        CompletionProcessor,
        EngineCloser,
        WorkerRedisCloser,
      ],
    };
  }
}
