import { Module } from '@nestjs/common';
import { ModelsModule } from '../../models/models.module';
import { CompletionQueuesModule } from '../../pipeline/completion-queues.module';
import { PipelineModule } from '../../pipeline/pipeline.module';
import { TokenizeController } from './tokenize.controller';
import { TokenizeService } from './tokenize.service';

/** The tokenizer door: `POST /tokenize` and `POST /detokenize`, `tokenize` jobs on the model's queue. */
@Module({
  imports: [PipelineModule, CompletionQueuesModule, ModelsModule],
  controllers: [TokenizeController],
  providers: [TokenizeService],
})
export class TokenizeModule {}
