import { isJsonObject } from '@app/contracts';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsBoolean,
  IsIn,
  IsInt,
  IsNotEmpty,
  IsObject,
  IsOptional,
  IsString,
  MaxLength,
  Min,
  ValidateNested,
} from 'class-validator';
import { shapeValidator } from '../common/field-validators';
import { GenerationRequestDto } from '../common/generation-request.dto';

/** At most this many tools (function and hosted together); Codex with MCP servers sends dozens. */
export const MAX_RESPONSE_TOOLS = 512;

/** OpenAI's `include` entries. Each is accepted; what it asks for is produced where it applies here (README, "Responses API"). */
export const INCLUDE_ENTRIES = [
  'file_search_call.results',
  'web_search_call.results',
  'web_search_call.action.sources',
  'message.input_image.image_url',
  'computer_call_output.output.image_url',
  'code_interpreter_call.outputs',
  'reasoning.encrypted_content',
  'message.output_text.logprobs',
] as const;

/** A string, or a list of JSON objects (each item's fields are checked by type when the job is built). */
const IsResponseInput = shapeValidator(
  'isResponseInput',
  (value) => typeof value === 'string' || (Array.isArray(value) && value.every(isJsonObject)),
  'input must be a string or an array of input items (objects)',
);

/** Each tool an object with a string `type`; a function tool's fields are checked when the job is built. */
const IsToolList = shapeValidator(
  'isToolList',
  (value) => Array.isArray(value) && value.every((tool) => isJsonObject(tool) && typeof tool.type === 'string'),
  'tools must be an array of tool objects, each with a type',
);

/** `none`, `auto`, `required`, or an object naming a tool (`{type: "function", name}`, a hosted type, `allowed_tools`). */
const IsResponseToolChoice = shapeValidator(
  'isResponseToolChoice',
  (value) => value === 'none' || value === 'auto' || value === 'required' || (isJsonObject(value) && typeof value.type === 'string'),
  `tool_choice must be 'none', 'auto', 'required' or an object such as {"type": "function", "name": ...}`,
);

const IsTextFormat = shapeValidator(
  'isTextFormat',
  (value) => isJsonObject(value) && (value.type === 'text' || value.type === 'json_object' || value.type === 'json_schema'),
  "format must be {type: 'text'}, {type: 'json_object'} or {type: 'json_schema', name, schema, strict}",
);

/** OpenAI's `text`: the answer's format and its verbosity. */
export class ResponseTextDto {
  @IsOptional()
  @IsTextFormat()
  format?: { type: 'text' } | { type: 'json_object' } | { type: 'json_schema'; name?: unknown; schema?: unknown; strict?: unknown; description?: unknown };

  /** Accepted: a generated model has no notion of verbosity. */
  @IsOptional()
  @IsIn(['low', 'medium', 'high'])
  verbosity?: string;
}

/**
 * OpenAI's `reasoning`. A reasoning model's thought comes out as a `reasoning` item; `effort`
 * `none` or `minimal` turns its thinking off (the other efforts think as its template does), and
 * `summary` (or the older `generate_summary`) gives the thought as the item's summary too. `context`
 * and `mode` are accepted and change nothing here.
 */
export class ReasoningDto {
  @IsOptional()
  @IsIn(['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'])
  effort?: string;

  @IsOptional()
  @IsIn(['auto', 'concise', 'detailed'])
  summary?: string;

  @IsOptional()
  @IsIn(['auto', 'concise', 'detailed'])
  generate_summary?: string;

  @IsOptional()
  @IsIn(['auto', 'current_turn', 'all_turns'])
  context?: string;

  @IsOptional()
  @IsString()
  mode?: string;
}

export class ResponseStreamOptionsDto {
  /** Accepted: obfuscation pads events against side channels on OpenAI's network; not added here. */
  @IsOptional()
  @IsBoolean()
  include_obfuscation?: boolean;
}

/**
 * One entry of OpenAI's `context_management`: compaction when the rendered prompt reaches
 * `compact_threshold` tokens (server-compaction.ts; absent or null: 80% of the model's context).
 */
export class ContextManagementDto {
  @IsIn(['compaction'])
  type!: string;

  @IsOptional()
  @IsInt()
  @Min(1000)
  compact_threshold?: number;
}

/**
 * The subset of OpenAI's CreateResponse this service implements, plus what Codex sends beyond
 * the published schema (`client_metadata`). Any other field is refused by name. `null` counts as
 * absent (class-validator's IsOptional); the mapper reads every field with `??`.
 */
export class CreateResponseDto extends GenerationRequestDto {
  @IsOptional()
  @IsResponseInput()
  input?: string | Array<Record<string, unknown>>;

  /** A system message placed before the input (not carried over by `previous_response_id`). */
  @IsOptional()
  @IsString()
  instructions?: string;

  @IsOptional()
  @IsString()
  @IsNotEmpty()
  @MaxLength(256)
  previous_response_id?: string;

  @IsOptional()
  @IsToolList()
  @ArrayMaxSize(MAX_RESPONSE_TOOLS)
  tools?: Array<Record<string, unknown>>;

  @IsOptional()
  @IsResponseToolChoice()
  tool_choice?: 'none' | 'auto' | 'required' | Record<string, unknown>;

  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => ResponseTextDto)
  text?: ResponseTextDto;

  @IsOptional()
  @IsInt()
  @Min(16)
  max_output_tokens?: number;

  /** Bounds the remote MCP calls the service makes for the response (with MCP_MAX_CALLS_PER_RESPONSE); hosted tools never run here. */
  @IsOptional()
  @IsInt()
  @Min(1)
  max_tool_calls?: number;

  @IsOptional()
  @IsArray()
  @IsIn(INCLUDE_ENTRIES, { each: true, message: `each entry of include must be one of ${INCLUDE_ENTRIES.join(', ')}` })
  include?: string[];

  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => ResponseStreamOptionsDto)
  stream_options?: ResponseStreamOptionsDto;

  @IsOptional()
  @IsBoolean()
  background?: boolean;

  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => ReasoningDto)
  reasoning?: ReasoningDto;

  @IsOptional()
  @IsIn(['auto', 'default', 'flex', 'priority', 'scale', 'fast', 'ultrafast'])
  service_tier?: string;

  /**
   * `disabled` (the default): a conversation over the model's context is a 400
   * (`context_length_exceeded`). `auto`: the llama worker drops its oldest items (never the
   * instructions, never the last item) until it fits; an upstream engine refuses it as disabled.
   */
  @IsOptional()
  @IsIn(['auto', 'disabled'])
  truncation?: string;

  @IsOptional()
  @IsIn(['in_memory', '24h', 'in-memory'])
  prompt_cache_retention?: string;

  /** Codex sends it (installation and session ids); it is not part of OpenAI's published schema. Accepted and not kept. */
  @IsOptional()
  @IsObject()
  client_metadata?: Record<string, unknown>;

  /** A reusable prompt template from OpenAI's dashboard: none exist here, so it is refused by the mapper. */
  @IsOptional()
  @IsObject()
  prompt?: Record<string, unknown>;

  /** Server-side compaction (server-compaction.ts). */
  @IsOptional()
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(8)
  @ValidateNested({ each: true })
  @Type(() => ContextManagementDto)
  context_management?: ContextManagementDto[];

  /** The conversation it continues and extends (OpenAI's Conversations API): an id or `{id}`, checked by the mapper. */
  @IsOptional()
  conversation?: unknown;
}
