import { Controller, Get, Param, UseGuards } from '@nestjs/common';
import { ApiKeyGuard } from '../auth/api-key.guard';
import { CompletionQueues } from '../completions/completion-queues';
import { OpenAiError } from '../errors/openai-error';

interface ModelObject {
  id: string;
  object: 'model';
  created: number;
  owned_by: string;
}

/** When this API instance started: the models it serves became available then. */
const SERVED_SINCE = Math.floor(Date.now() / 1000);

@Controller('v1/models')
@UseGuards(ApiKeyGuard)
export class ModelsController {
  constructor(private readonly queues: CompletionQueues) {}

  @Get()
  list(): { object: 'list'; data: ModelObject[] } {
    return { object: 'list', data: this.queues.models.map(toModelObject) };
  }

  /** Model ids may contain slashes (`org/name`), so the rest of the path is the id. */
  @Get('*')
  get(@Param('*') id: string): ModelObject {
    if (!this.queues.forModel(id)) throw OpenAiError.modelNotFound(id);
    return toModelObject(id);
  }
}

function toModelObject(id: string): ModelObject {
  return { id, object: 'model', created: SERVED_SINCE, owned_by: 'organization-owner' };
}
