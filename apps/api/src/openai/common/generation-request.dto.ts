import { MAX_TOP_LOGPROBS } from '@app/contracts';
import { Type } from 'class-transformer';
import { IsBoolean, IsIn, IsInt, IsNotEmpty, IsObject, IsOptional, IsString, Max, MaxLength, Min, ValidateNested } from 'class-validator';
import { IsMetadata, IsPenalty, IsTemperature, IsTopP } from './field-validators';

/** OpenAI's prompt caching options: whether the shared start is kept besides the explicit breakpoints. */
export class PromptCacheOptionsDto {
  @IsOptional()
  @IsIn(['implicit', 'explicit'])
  mode?: 'implicit' | 'explicit';

  /** Accepted: a kept prefix lives until its sequence is needed for another prompt (docs/configuration.md, PROMPT_CACHE). */
  @IsOptional()
  @IsIn(['30m'])
  ttl?: '30m';
}

/** `stream_options`: a last chunk with the usage. */
export class StreamOptionsDto {
  @IsOptional()
  @IsBoolean()
  include_usage?: boolean;
}

/**
 * The fields every door that generates text takes with the same meaning and the same checks: the
 * model, sampling, streaming, keeping, and the ids that place and attribute a request. Each door's
 * request extends it with its own fields; what a field defaults to is the door's mapper's to say
 * (`store` is off on the chat door and on for Responses, as OpenAI's).
 */
export abstract class GenerationRequestDto {
  @IsString()
  @IsNotEmpty()
  @MaxLength(256)
  model!: string;

  @IsTemperature()
  temperature?: number;

  @IsTopP()
  top_p?: number;

  @IsPenalty()
  frequency_penalty?: number;

  @IsPenalty()
  presence_penalty?: number;

  /** Alternatives per token, with their log probabilities. */
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(MAX_TOP_LOGPROBS)
  top_logprobs?: number;

  @IsOptional()
  @IsBoolean()
  parallel_tool_calls?: boolean;

  @IsOptional()
  @IsBoolean()
  stream?: boolean;

  /**
   * Keeps the answer for STORE_TTL_SECONDS, finishes it even when the client leaves, and makes a
   * stream resumable (docs/api.md, "Stored completions" and "Responses API").
   */
  @IsOptional()
  @IsBoolean()
  store?: boolean;

  /** Kept with a stored answer, for filtering lists; changes nothing in the answer. */
  @IsOptional()
  @IsMetadata()
  metadata?: Record<string, string>;

  @IsOptional()
  @IsString()
  @MaxLength(1024)
  prompt_cache_key?: string;

  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => PromptCacheOptionsDto)
  prompt_cache_options?: PromptCacheOptionsDto;

  /** An end-user id for abuse monitoring: accepted, changes nothing in the answer. */
  @IsOptional()
  @IsString()
  @MaxLength(256)
  user?: string;

  @IsOptional()
  @IsString()
  @MaxLength(256)
  safety_identifier?: string;
}
