import { MAX_RANK_DOCUMENTS } from '@app/contracts';
import { IsBoolean, IsInt, IsNotEmpty, IsOptional, IsString, MaxLength, Min } from 'class-validator';
import { MAX_MESSAGE_CHARS } from '../common/request-limits';
import { shapeValidator } from '../common/field-validators';

/** A document as rerank APIs take it: its text, or an object holding it (Jina's and Cohere's `{text}`). */
export type RerankDocument = string | { text: string };

const isDocument = (value: unknown): boolean =>
  typeof value === 'string' || (typeof value === 'object' && value !== null && !Array.isArray(value) && typeof (value as { text?: unknown }).text === 'string');

/** The list's shape and size; an empty or overlong document is the mapper's, which names `documents[i]`. */
const isDocuments = (value: unknown): boolean => Array.isArray(value) && value.length <= MAX_RANK_DOCUMENTS && value.every(isDocument);

const IsDocuments = shapeValidator(
  'isDocuments',
  isDocuments,
  `documents must be an array of strings or of {text} objects, with at most ${MAX_RANK_DOCUMENTS} items`,
);

/**
 * `POST /v1/rerank` (and `/rerank`), as vLLM, llama.cpp's server and Jina take it: the documents
 * are scored against the query and answered best first.
 */
export class RerankRequestDto {
  @IsString()
  @IsNotEmpty()
  @MaxLength(256)
  model!: string;

  @IsString()
  @IsNotEmpty()
  @MaxLength(MAX_MESSAGE_CHARS)
  query!: string;

  @IsDocuments()
  documents!: RerankDocument[];

  /** How many of the best to answer; absent (or 0, as vLLM reads it) means all. */
  @IsOptional()
  @IsInt()
  @Min(0)
  top_n?: number;

  /** Whether each result holds its document (`{text}`); true when absent, as Jina's and vLLM's do. */
  @IsOptional()
  @IsBoolean()
  return_documents?: boolean;

  @IsOptional()
  @IsString()
  @MaxLength(256)
  user?: string;
}
