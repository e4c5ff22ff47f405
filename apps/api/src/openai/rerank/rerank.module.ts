import { Module } from '@nestjs/common';
import { CompletionQueuesModule } from '../../pipeline/completion-queues.module';
import { PipelineModule } from '../../pipeline/pipeline.module';
import { RerankController } from './rerank.controller';
import { RerankService } from './rerank.service';

/** The rerank door: `POST /v1/rerank` and `POST /rerank`, a `rank` job on the model's queue. */
@Module({
  imports: [PipelineModule, CompletionQueuesModule],
  controllers: [RerankController],
  providers: [RerankService],
})
export class RerankModule {}
