import { MAX_CHOICES } from '@app/contracts';
import { Type } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsBoolean, IsIn, IsInt, IsObject, IsOptional, Max, Min, ValidateNested } from 'class-validator';
import { ChatMessageDto } from '../common/chat-message.dto';
import { IsStopSequences } from '../common/stop-sequences.validator';
import { IsLogitBias } from '../common/field-validators';
import { GenerationRequestDto, StreamOptionsDto } from '../common/generation-request.dto';
import { MAX_MESSAGES, MAX_TOOLS } from '../common/request-limits';
import { IsResponseFormat, IsToolChoice, ToolDto } from './tool-and-format.dto';
import type { ResponseFormatValue, ToolChoiceValue } from './tool-and-format.dto';

/**
 * The subset of OpenAI's CreateChatCompletionRequest this service implements. Any other field
 * is refused by name (ValidationPipe's forbidNonWhitelisted) rather than silently ignored.
 * `null` counts as absent, as in OpenAI's API: NullFieldsPipe drops such fields before validation.
 */
export class ChatCompletionRequestDto extends GenerationRequestDto {
  @IsArray()
  @ArrayMinSize(1, { message: 'messages must contain at least one message' })
  @ArrayMaxSize(MAX_MESSAGES)
  @ValidateNested({ each: true })
  @Type(() => ChatMessageDto)
  messages!: ChatMessageDto[];

  @IsOptional()
  @IsInt()
  @Min(1)
  max_tokens?: number;

  @IsOptional()
  @IsInt()
  @Min(1)
  max_completion_tokens?: number;

  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => StreamOptionsDto)
  stream_options?: StreamOptionsDto;

  @IsOptional()
  @IsStopSequences()
  stop?: string | string[];

  @IsOptional()
  @IsInt()
  seed?: number;

  @IsOptional()
  @IsLogitBias()
  logit_bias?: Record<string, number>;

  /** Each generated token's log probability, in `choices[].logprobs.content`. */
  @IsOptional()
  @IsBoolean()
  logprobs?: boolean;

  /** Choices to generate, one after another on the worker, each with its own seed. */
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(MAX_CHOICES)
  n?: number;

  @IsOptional()
  @IsArray()
  @ArrayMaxSize(MAX_TOOLS)
  @ValidateNested({ each: true })
  @Type(() => ToolDto)
  tools?: ToolDto[];

  @IsOptional()
  @IsToolChoice()
  tool_choice?: ToolChoiceValue;

  @IsOptional()
  @IsResponseFormat()
  response_format?: ResponseFormatValue;

  // Accepted and ignored: they change nothing in the answer (docs/api.md, "Accepted and ignored").

  /** Where the job waits in its queue (docs/api.md, "Service tiers"); the answer names the tier used. */
  @IsOptional()
  @IsIn(['auto', 'default', 'flex', 'priority', 'scale'])
  service_tier?: string;

  @IsOptional()
  @IsIn(['low', 'medium', 'high'])
  verbosity?: string;

  @IsOptional()
  /** `none` and `minimal` turn a reasoning model's thinking off (as llama.cpp's server reads them); the others leave it on. */
  @IsIn(['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'])
  reasoning_effort?: string;

  @IsOptional()
  @IsArray()
  @IsIn(['text'], { each: true, message: "modalities may only hold 'text'" })
  modalities?: string[];
}
