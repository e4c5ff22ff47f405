import { Type } from 'class-transformer';
import { IsBoolean, IsIn, IsObject, IsOptional, IsString, Matches, ValidateNested } from 'class-validator';
import { isJsonObject } from '@app/contracts';
import { shapeValidator } from '../common/field-validators';
import { FUNCTION_NAME } from '../common/request-limits';

export class FunctionDefinitionDto {
  @Matches(FUNCTION_NAME, { message: 'name must be 1-64 characters of a-z, A-Z, 0-9, underscores and dashes' })
  name!: string;

  @IsOptional()
  @IsString()
  description?: string;

  /** A JSON Schema object; checked by the schema checker when the job is built (completion-job.mapper.ts). */
  @IsOptional()
  @IsObject()
  parameters?: Record<string, unknown>;

  /** Strict: a keyword the grammar cannot enforce refuses the tool; not strict, it is a hint (both enforce the rest). */
  @IsOptional()
  @IsBoolean()
  strict?: boolean;
}

export class ToolDto {
  @IsIn(['function'], { message: "type must be 'function'" })
  type!: 'function';

  @IsObject()
  @ValidateNested()
  @Type(() => FunctionDefinitionDto)
  function!: FunctionDefinitionDto;
}

export type ToolChoiceValue = 'none' | 'auto' | 'required' | { type: 'function'; function: { name: string } };

const hasOnlyKeys = (value: Record<string, unknown>, keys: string[]): boolean => Object.keys(value).every((key) => keys.includes(key));

function isToolChoice(value: unknown): value is ToolChoiceValue {
  if (value === 'none' || value === 'auto' || value === 'required') return true;
  if (!isJsonObject(value) || value.type !== 'function' || !hasOnlyKeys(value, ['type', 'function'])) return false;
  const fn = value.function;
  return isJsonObject(fn) && hasOnlyKeys(fn, ['name']) && typeof fn.name === 'string' && FUNCTION_NAME.test(fn.name);
}

/** `none`, `auto`, `required`, or `{"type": "function", "function": {"name": ...}}`. */
export const IsToolChoice = shapeValidator(
  'isToolChoice',
  isToolChoice,
  `tool_choice must be 'none', 'auto', 'required' or {"type": "function", "function": {"name": ...}}`,
);

export type ResponseFormatValue =
  | { type: 'text' }
  | { type: 'json_object' }
  | { type: 'json_schema'; json_schema: { name: string; description?: string; schema?: Record<string, unknown>; strict?: boolean | null } };

function isResponseFormat(value: unknown): value is ResponseFormatValue {
  if (!isJsonObject(value)) return false;
  if (value.type === 'text' || value.type === 'json_object') return hasOnlyKeys(value, ['type']);
  if (value.type !== 'json_schema' || !hasOnlyKeys(value, ['type', 'json_schema'])) return false;
  const spec = value.json_schema;
  return (
    isJsonObject(spec) &&
    hasOnlyKeys(spec, ['name', 'description', 'schema', 'strict']) &&
    typeof spec.name === 'string' &&
    FUNCTION_NAME.test(spec.name) &&
    (spec.description === undefined || typeof spec.description === 'string') &&
    (spec.schema === undefined || isJsonObject(spec.schema)) &&
    (spec.strict === undefined || spec.strict === null || typeof spec.strict === 'boolean')
  );
}

/** `{"type": "text"}`, `{"type": "json_object"}` or `{"type": "json_schema", "json_schema": {name, schema, strict}}`. */
export const IsResponseFormat = shapeValidator(
  'isResponseFormat',
  isResponseFormat,
  "response_format must be {type: 'text'}, {type: 'json_object'} or {type: 'json_schema', json_schema: {name, schema, strict}}",
);
