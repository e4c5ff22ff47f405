import { Module } from '@nestjs/common';
import { CompletionQueuesModule } from '../../pipeline/completion-queues.module';
import { PipelineModule } from '../../pipeline/pipeline.module';
import { TextCompletionsController } from './text-completions.controller';
import { TextCompletionsService } from './text-completions.service';

/** The legacy completions door: `POST /v1/completions`, plain prompts as `generate` jobs on the model's queue. */
@Module({
  imports: [PipelineModule, CompletionQueuesModule],
  controllers: [TextCompletionsController],
  providers: [TextCompletionsService],
})
export class TextCompletionsModule {}
