import { Type } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsIn, IsNotEmpty, IsObject, IsOptional, IsString, Matches, MaxLength, ValidateNested } from 'class-validator';
import { IsMessageContent } from './message-content.validator';
import type { MessageContent } from './message-content.validator';
import { FUNCTION_NAME, MAX_TOOLS } from './request-limits';

export class FunctionCallDto {
  @Matches(FUNCTION_NAME, { message: 'name must be 1-64 characters of a-z, A-Z, 0-9, underscores and dashes' })
  name!: string;

  @IsString()
  arguments!: string;
}

/** A call an earlier assistant message made (`messages[].tool_calls[]`). */
export class ToolCallDto {
  @IsString()
  @IsNotEmpty()
  @MaxLength(256)
  id!: string;

  @IsIn(['function'], { message: "type must be 'function'" })
  type!: 'function';

  @IsObject()
  @ValidateNested()
  @Type(() => FunctionCallDto)
  function!: FunctionCallDto;
}

/**
 * One message of any role; which fields a role needs (content, tool_calls, tool_call_id) is
 * checked when the job is built, where the whole conversation is in view.
 */
export class ChatMessageDto {
  @IsIn(['system', 'developer', 'user', 'assistant', 'tool'], { message: 'role must be one of system, developer, user, assistant, tool' })
  role!: 'system' | 'developer' | 'user' | 'assistant' | 'tool';

  /** Absent or null only on an assistant message that makes tool calls. */
  @IsOptional()
  @IsMessageContent()
  content?: MessageContent | null;

  /** A participant's name; it does not change the answer. */
  @IsOptional()
  @IsString()
  @MaxLength(256)
  name?: string;

  @IsOptional()
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(MAX_TOOLS)
  @ValidateNested({ each: true })
  @Type(() => ToolCallDto)
  tool_calls?: ToolCallDto[];

  @IsOptional()
  @IsString()
  @IsNotEmpty()
  @MaxLength(256)
  tool_call_id?: string;

  /**
   * What an assistant thought before its answer, as a reasoning model's server sent it
   * (`reasoning_content`; vLLM's newer name is `reasoning`): rendered back where the template does.
   */
  @IsOptional()
  @IsString()
  reasoning_content?: string;

  @IsOptional()
  @IsString()
  reasoning?: string;

  /** An earlier refusal the client echoes back; nothing to apply. */
  @IsOptional()
  @IsString()
  refusal?: string;
}
