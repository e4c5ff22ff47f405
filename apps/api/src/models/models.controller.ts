import { Controller, Get, Param, UseGuards } from '@nestjs/common';
import { ApiKeyGuard } from '../auth/api-key.guard';
import { OpenAiError } from '../errors/openai-error';
import { ModelRegistry } from './model-registry';

interface ModelObject {
  id: string;
  object: 'model';
  created: number;
  owned_by: string;
}

/** When this API instance started: the models it serves became available then. */
const SERVED_SINCE = Math.floor(Date.now() / 1000);

/** Configured models and those live workers serve, in OpenAI's shape. */
@Controller('v1/models')
@UseGuards(ApiKeyGuard)
export class ModelsController {
  constructor(private readonly registry: ModelRegistry) {}

  @Get()
  list(): { object: 'list'; data: ModelObject[] } {
    return { object: 'list', data: this.registry.list().map(({ id }) => toModelObject(id)) };
  }

  /** Model ids may contain slashes (`org/name`), so the rest of the path is the id. */
  @Get('*')
  get(@Param('*') id: string): ModelObject {
    if (!this.registry.serves(id)) throw OpenAiError.modelNotFound(id);
    return toModelObject(id);
  }
}

function toModelObject(id: string): ModelObject {
  return { id, object: 'model', created: SERVED_SINCE, owned_by: 'organization-owner' };
}
