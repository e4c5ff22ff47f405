import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsBoolean,
  IsIn,
  IsInt,
  IsNotEmpty,
  IsNumber,
  IsObject,
  IsOptional,
  IsString,
  Max,
  MaxLength,
  Min,
  ValidateNested,
} from 'class-validator';
import { IsMessageContent } from './message-content.validator';
import type { MessageContent } from './message-content.validator';
import { IsStopSequences } from './stop-sequences.validator';

export const MAX_MESSAGES = 2048;
const FINITE = { allowNaN: false, allowInfinity: false };

export class ChatMessageDto {
  @IsIn(['system', 'developer', 'user', 'assistant'], { message: 'role must be one of system, developer, user, assistant' })
  role!: 'system' | 'developer' | 'user' | 'assistant';

  @IsMessageContent()
  content!: MessageContent;
}

export class StreamOptionsDto {
  @IsOptional()
  @IsBoolean()
  include_usage?: boolean;
}

/**
 * The subset of OpenAI's CreateChatCompletionRequest this service implements. Any other field
 * is refused by name (ValidationPipe's forbidNonWhitelisted) rather than silently ignored.
 * `null` counts as absent, as in OpenAI's API.
 */
export class ChatCompletionRequestDto {
  @IsString()
  @IsNotEmpty()
  @MaxLength(256)
  model!: string;

  @IsArray()
  @ArrayMinSize(1, { message: 'messages must contain at least one message' })
  @ArrayMaxSize(MAX_MESSAGES)
  @ValidateNested({ each: true })
  @Type(() => ChatMessageDto)
  messages!: ChatMessageDto[];

  @IsOptional()
  @IsNumber(FINITE)
  @Min(0)
  @Max(2)
  temperature?: number;

  @IsOptional()
  @IsNumber(FINITE)
  @Min(0)
  @Max(1)
  top_p?: number;

  @IsOptional()
  @IsInt()
  @Min(1)
  max_tokens?: number;

  @IsOptional()
  @IsInt()
  @Min(1)
  max_completion_tokens?: number;

  @IsOptional()
  @IsBoolean()
  stream?: boolean;

  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => StreamOptionsDto)
  stream_options?: StreamOptionsDto;

  @IsOptional()
  @IsStopSequences()
  stop?: string | string[];

  @IsOptional()
  @IsNumber(FINITE)
  @Min(-2)
  @Max(2)
  frequency_penalty?: number;

  @IsOptional()
  @IsNumber(FINITE)
  @Min(-2)
  @Max(2)
  presence_penalty?: number;

  @IsOptional()
  @IsInt()
  seed?: number;

  /** Only one choice per request is generated; `n: 1` is accepted because clients send it. */
  @IsOptional()
  @IsIn([1], { message: 'n must be 1: only one choice per request is supported' })
  n?: number;

  /** An end-user id for abuse monitoring; it does not change the answer. */
  @IsOptional()
  @IsString()
  @MaxLength(256)
  user?: string;
}
