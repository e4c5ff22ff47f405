import { Type } from 'class-transformer';
import { IsIn, IsNotEmpty, IsObject, IsOptional, IsString, MaxLength, ValidateNested } from 'class-validator';
import { PromptCacheOptionsDto } from '../common/generation-request.dto';
import { IsResponseInput } from './responses-request.dto';

/** OpenAI's body of `POST /v1/responses/compact` (CompactResponseMethodPublicBody); any other field is refused by name. */
export class CompactRequestDto {
  @IsString()
  @IsNotEmpty()
  @MaxLength(256)
  model!: string;

  @IsOptional()
  @IsResponseInput()
  input?: string | Array<Record<string, unknown>>;

  @IsOptional()
  @IsString()
  @IsNotEmpty()
  @MaxLength(256)
  previous_response_id?: string;

  /** The system message of the summarising turn, as it is of a response's. */
  @IsOptional()
  @IsString()
  instructions?: string;

  @IsOptional()
  @IsString()
  @MaxLength(64)
  prompt_cache_key?: string;

  @IsOptional()
  @IsIn(['in_memory', '24h', 'in-memory'])
  prompt_cache_retention?: string;

  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => PromptCacheOptionsDto)
  prompt_cache_options?: PromptCacheOptionsDto;

  @IsOptional()
  @IsIn(['auto', 'default', 'flex', 'priority', 'scale', 'fast', 'ultrafast'])
  service_tier?: string;
}
