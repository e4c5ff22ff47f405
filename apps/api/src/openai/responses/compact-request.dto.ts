import { PickType } from '@nestjs/swagger';
import { CreateResponseDto } from './responses-request.dto';

/**
 * OpenAI's body of `POST /v1/responses/compact` (CompactResponseMethodPublicBody): these fields of
 * a create's, checked alike; any other field is refused by name. `instructions` are the system
 * message of the summarising turn, as they are of a response's.
 */
export class CompactRequestDto extends PickType(CreateResponseDto, [
  'model',
  'input',
  'previous_response_id',
  'instructions',
  'prompt_cache_key',
  'prompt_cache_retention',
  'prompt_cache_options',
  'service_tier',
] as const) {}
