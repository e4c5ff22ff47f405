import { MAX_EMBEDDING_INPUTS } from '@app/contracts';
import { IsBoolean, IsIn, IsInt, IsNotEmpty, IsOptional, IsString, MaxLength, Min } from 'class-validator';
import { shapeValidator } from '../common/field-validators';

/** OpenAI's `input`: a string, strings, token ids, or arrays of token ids. */
export type EmbeddingsInputValue = string | string[] | number[] | number[][];

const isTokenId = (value: unknown): boolean => Number.isInteger(value) && (value as number) >= 0;

/** The four shapes OpenAI takes (a list holds one kind of item); emptiness and bounds are the mapper's, which names `input[i]`. */
function isEmbeddingsInput(value: unknown): boolean {
  if (typeof value === 'string') return true;
  if (!Array.isArray(value) || value.length > MAX_EMBEDDING_INPUTS) return false;
  return value.every((item) => typeof item === 'string') || value.every(isTokenId) || value.every((item) => Array.isArray(item) && item.every(isTokenId));
}

const IsEmbeddingsInput = shapeValidator(
  'isEmbeddingsInput',
  isEmbeddingsInput,
  `input must be a string, an array of strings, an array of token ids or an array of arrays of token ids, with at most ${MAX_EMBEDDING_INPUTS} items`,
);

/** `POST /v1/embeddings`, as OpenAI's CreateEmbeddingRequest has it, and `normalize` (vLLM's) for raw vectors. */
export class EmbeddingsRequestDto {
  @IsString()
  @IsNotEmpty()
  @MaxLength(256)
  model!: string;

  @IsEmbeddingsInput()
  input!: EmbeddingsInputValue;

  @IsOptional()
  @IsIn(['float', 'base64'])
  encoding_format?: 'float' | 'base64';

  /** Refused by the mapper: no model here was trained to be cut to fewer dimensions. */
  @IsOptional()
  @IsInt()
  @Min(1)
  dimensions?: number;

  @IsOptional()
  @IsString()
  @MaxLength(256)
  user?: string;

  /** Unit vectors (true, as OpenAI's are) or the model's own (false), for a model whose card wants them raw. */
  @IsOptional()
  @IsBoolean()
  normalize?: boolean;
}
