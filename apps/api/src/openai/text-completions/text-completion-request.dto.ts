import { MAX_CHOICES } from '@app/contracts';
import { Type } from 'class-transformer';
import { IsBoolean, IsInt, IsNotEmpty, IsObject, IsOptional, IsString, Max, MaxLength, Min, ValidateNested } from 'class-validator';
import { IsLogitBias, IsPenalty, IsTemperature, IsTopP, shapeValidator } from '../common/field-validators';
import { StreamOptionsDto } from '../common/generation-request.dto';
import { IsStopSequences } from '../common/stop-sequences.validator';

/** OpenAI's `prompt`: a string, strings, token ids, or arrays of token ids. */
export type TextCompletionPromptValue = string | string[] | number[] | number[][];

/** Most prompts one request may hold (OpenAI's `prompt` array bound is its token budget; this one keeps a job's work bounded). */
export const MAX_PROMPTS = 64;

/** Most alternatives per token `logprobs` may ask for (OpenAI's legacy bound). */
export const MAX_LEGACY_LOGPROBS = 5;

const isTokenId = (value: unknown): boolean => Number.isInteger(value) && (value as number) >= 0;

/** The four shapes OpenAI takes (a list holds one kind of item); emptiness is the mapper's, which names `prompt[i]`. */
function isPrompt(value: unknown): boolean {
  if (typeof value === 'string') return true;
  if (!Array.isArray(value)) return false;
  return value.every((item) => typeof item === 'string') || value.every(isTokenId) || value.every((item) => Array.isArray(item) && item.every(isTokenId));
}

const IsPrompt = shapeValidator('isPrompt', isPrompt, 'prompt must be a string, an array of strings, an array of token ids or an array of arrays of token ids');

/**
 * `POST /v1/completions`, OpenAI's legacy CreateCompletionRequest: a plain prompt, no chat
 * template. Any other field is refused by name; `null` counts as absent.
 */
export class TextCompletionRequestDto {
  @IsString()
  @IsNotEmpty()
  @MaxLength(256)
  model!: string;

  @IsPrompt()
  prompt!: TextCompletionPromptValue;

  /** Text after the answer: fill-in-the-middle, on a model with FIM tokens (a 400 naming it elsewhere). */
  @IsOptional()
  @IsString()
  suffix?: string;

  /** Tokens per answer; OpenAI's default is 16. */
  @IsOptional()
  @IsInt()
  @Min(0)
  max_tokens?: number;

  @IsTemperature()
  temperature?: number;

  @IsTopP()
  top_p?: number;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(MAX_CHOICES)
  n?: number;

  /** Answers generated per prompt to keep the best `n` of: only `best_of` equal to `n` (each answer kept) is honoured. */
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(MAX_CHOICES)
  best_of?: number;

  @IsOptional()
  @IsBoolean()
  stream?: boolean;

  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => StreamOptionsDto)
  stream_options?: StreamOptionsDto;

  /** The log probabilities of each token and of this many alternatives at its position (0 to 5). */
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(MAX_LEGACY_LOGPROBS)
  logprobs?: number;

  /** The prompt is given back before each answer (and, with `logprobs`, scored token by token). */
  @IsOptional()
  @IsBoolean()
  echo?: boolean;

  @IsOptional()
  @IsStopSequences()
  stop?: string | string[];

  @IsPenalty()
  frequency_penalty?: number;

  @IsPenalty()
  presence_penalty?: number;

  @IsOptional()
  @IsLogitBias()
  logit_bias?: Record<string, number>;

  @IsOptional()
  @IsInt()
  seed?: number;

  @IsOptional()
  @IsString()
  @MaxLength(256)
  user?: string;
}
