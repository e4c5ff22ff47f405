import { ArrayMaxSize, IsArray, IsBoolean, IsInt, IsNotEmpty, IsOptional, IsString, MaxLength, Min } from 'class-validator';
import { MAX_MESSAGE_CHARS } from '../common/request-limits';

/** Most tokens one detokenize request may send. */
export const MAX_DETOKENIZE_TOKENS = 300_000;

/** `POST /tokenize`, vLLM's shape for text: `{model, prompt, add_special_tokens}`. */
export class TokenizeRequestDto {
  @IsString()
  @IsNotEmpty()
  @MaxLength(256)
  model!: string;

  @IsOptional()
  @IsString()
  @MaxLength(MAX_MESSAGE_CHARS)
  prompt?: string;

  /** vLLM's chat form; refused by the mapper, which names the route that counts a conversation. */
  @IsOptional()
  messages?: unknown;

  /** The start token the model's tokenizer adds, and special tokens' text read as those tokens (vLLM's default: true). */
  @IsOptional()
  @IsBoolean()
  add_special_tokens?: boolean;
}

/** `POST /detokenize`: `{model, tokens}`. */
export class DetokenizeRequestDto {
  @IsString()
  @IsNotEmpty()
  @MaxLength(256)
  model!: string;

  @IsArray()
  @ArrayMaxSize(MAX_DETOKENIZE_TOKENS)
  @IsInt({ each: true })
  @Min(0, { each: true })
  tokens!: number[];
}
