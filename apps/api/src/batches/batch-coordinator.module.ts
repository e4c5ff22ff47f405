import { Module } from '@nestjs/common';
import type { DynamicModule } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import { ApiRedisModule } from '../redis/api-redis.module';
import { CompletionQueues } from '../pipeline/completion-queues';
import { FileRecords } from '../files/file-records';
import { fileStorageProviders } from '../files/file-storage.providers';
import { FilesService } from '../files/files.service';
import { ModelRegistry } from '../models/model-registry';
import { BatchCoordinator } from './batch-coordinator';
import { BatchQueue } from './batch-queue';
import { BatchRecords } from './batch-records';
import { batchWorkerProviders } from './batch-worker';

/**
 * The batch coordinator alone, for a process of its own (`npm run start:batch-coordinator`): what
 * it reads and writes (batch records, files, the models' queues) and nothing that serves HTTP.
 * API instances beside it can then run with BATCH_COORDINATOR=false.
 */
@Module({})
export class BatchCoordinatorModule {
  static register(env: ApiEnv): DynamicModule {
    return {
      module: BatchCoordinatorModule,
      imports: [ApiRedisModule.register(env)],
      providers: [
        { provide: ApiEnv, useValue: env },
        CompletionQueues,
        ModelRegistry,
        ...fileStorageProviders,
        FileRecords,
        FilesService,
        BatchRecords,
        BatchQueue,
        BatchCoordinator,
        // This process exists to coordinate, whatever BATCH_COORDINATOR says.
        ...batchWorkerProviders(() => true),
      ],
    };
  }
}
