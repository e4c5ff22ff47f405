import { Module } from '@nestjs/common';
import { ModelRegistry } from './model-registry';
import { ModelsController } from './models.controller';

/** The models live workers serve (their announcements in Redis), and `GET /v1/models`. */
@Module({
  controllers: [ModelsController],
  providers: [ModelRegistry],
  exports: [ModelRegistry],
})
export class ModelsModule {}
