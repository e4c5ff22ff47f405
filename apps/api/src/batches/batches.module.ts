import { Module } from '@nestjs/common';
import type { DynamicModule } from '@nestjs/common';
import type { ApiEnv } from '@app/config';
import { FilesModule } from '../files/files.module';
import { ModelsModule } from '../models/models.module';
import type { BatchLineDoor } from '../openai/common/batch-line-door';
import { CompletionQueuesModule } from '../pipeline/completion-queues.module';
import { BatchCoordinator } from './batch-coordinator';
import { BatchLineDoors } from './batch-line-doors';
import { BatchQueue } from './batch-queue';
import { BatchRecords } from './batch-records';
import { BatchResultFiles } from './batch-result-files';
import { batchWorkerProviders } from './batch-worker';
import { BatchesController } from './batches.controller';

export interface BatchesOptions {
  /** The doors whose requests a batch may hold, found by the batch's endpoint. */
  doors: readonly BatchLineDoor[];
  /** Whether this process coordinates batches (BATCH_COORDINATOR in an API instance). */
  coordinates: (env: ApiEnv) => boolean;
}

/** The Batch API: batch records, the coordination queue, and (where this process coordinates) its worker. */
@Module({})
export class BatchesModule {
  static register(options: BatchesOptions): DynamicModule {
    return {
      module: BatchesModule,
      imports: [FilesModule, CompletionQueuesModule, ModelsModule],
      controllers: [BatchesController],
      providers: [
        { provide: BatchLineDoors, useValue: new BatchLineDoors(options.doors) },
        BatchRecords,
        BatchQueue,
        BatchResultFiles,
        BatchCoordinator,
        ...batchWorkerProviders(options.coordinates),
      ],
      exports: [BatchQueue],
    };
  }
}
