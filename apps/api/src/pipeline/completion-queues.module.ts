import { Module } from '@nestjs/common';
import { CompletionQueues } from './completion-queues';

/** Each model's BullMQ queues, for whoever adds or reads jobs: the pipeline, the doors, the Batch API, Bull Board. */
@Module({
  providers: [CompletionQueues],
  exports: [CompletionQueues],
})
export class CompletionQueuesModule {}
