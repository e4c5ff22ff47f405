import { Module } from '@nestjs/common';
import type { DynamicModule } from '@nestjs/common';
import type { ApiEnv } from '@app/config';
import { BATCH_LINE_DOORS } from '../openai/batch-line-doors';
import { ApiRedisModule } from '../redis/api-redis.module';
import { BatchesModule } from './batches.module';

/**
 * The batch coordinator alone, for a process of its own (`npm run start:batch-coordinator`): the
 * Batch API's module (batch records, files, the models' queues) and nothing else; it serves no
 * HTTP. API instances beside it can then run with BATCH_COORDINATOR=false.
 */
@Module({})
export class BatchCoordinatorModule {
  static register(env: ApiEnv): DynamicModule {
    return {
      module: BatchCoordinatorModule,
      // This process exists to coordinate, whatever BATCH_COORDINATOR says.
      imports: [ApiRedisModule.register(env), BatchesModule.register({ doors: BATCH_LINE_DOORS, coordinates: () => true })],
    };
  }
}
