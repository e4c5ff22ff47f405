import { Type } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsBoolean, IsInt, IsNotEmpty, IsOptional, IsString, MaxLength, Min, ValidateNested } from 'class-validator';
import { ChatMessageDto } from '../common/chat-message.dto';
import { MAX_MESSAGE_CHARS, MAX_MESSAGES } from '../common/request-limits';

/** Most tokens one detokenize request may send. */
export const MAX_DETOKENIZE_TOKENS = 300_000;

/** `POST /tokenize`, vLLM's shapes: text (`{model, prompt, add_special_tokens}`) or a chat (`{model, messages, add_generation_prompt}`). */
export class TokenizeRequestDto {
  @IsString()
  @IsNotEmpty()
  @MaxLength(256)
  model!: string;

  @IsOptional()
  @IsString()
  @MaxLength(MAX_MESSAGE_CHARS)
  prompt?: string;

  /** A conversation, rendered by the model's chat template as a chat completion of it would be. */
  @IsOptional()
  @IsArray()
  @ArrayMinSize(1, { message: 'messages must contain at least one message' })
  @ArrayMaxSize(MAX_MESSAGES)
  @ValidateNested({ each: true })
  @Type(() => ChatMessageDto)
  messages?: ChatMessageDto[];

  /** With messages: the template's start of the answer after them (vLLM's default: true); false is not honoured here. */
  @IsOptional()
  @IsBoolean()
  add_generation_prompt?: boolean;

  /**
   * The start token the model's tokenizer adds, and special tokens' text read as those tokens
   * (vLLM's default: true for a prompt; a chat template adds its own, so with messages only false).
   */
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
