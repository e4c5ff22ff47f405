import type { OperationObject, ResponseObject, SchemaObject } from '@nestjs/swagger';
import { MAX_RANK_DOCUMENTS } from '@app/contracts';
import { ref } from './openapi-schemas';

/** `POST /v1/rerank`'s request and answer, in the shape vLLM, llama.cpp's server and Jina share. */
export const RERANK_SCHEMAS: Record<string, SchemaObject> = {
  RerankRequest: {
    type: 'object',
    required: ['model', 'query', 'documents'],
    properties: {
      model: { type: 'string', example: 'tiny-rank', description: 'A reranker (a GGUF with rank pooling and a classifier head).' },
      query: { type: 'string', minLength: 1 },
      documents: {
        description: `One to ${MAX_RANK_DOCUMENTS} documents, none empty: texts, or objects holding one.`,
        type: 'array',
        minItems: 1,
        maxItems: MAX_RANK_DOCUMENTS,
        items: {
          oneOf: [
            { type: 'string', minLength: 1 },
            { type: 'object', required: ['text'], properties: { text: { type: 'string', minLength: 1 } } },
          ],
        },
      },
      top_n: { type: 'integer', minimum: 0, description: 'How many of the best to answer; absent or 0: all.' },
      return_documents: { type: 'boolean', default: true, description: 'Whether each result holds its document.' },
      user: { type: 'string' },
    },
  },
  RerankResponse: {
    type: 'object',
    required: ['id', 'model', 'results', 'usage'],
    properties: {
      id: { type: 'string', example: 'rerank-0193…' },
      model: { type: 'string' },
      results: {
        type: 'array',
        description: 'Best first; equal scores in request order.',
        items: {
          type: 'object',
          required: ['index', 'relevance_score'],
          properties: {
            index: { type: 'integer', description: 'The document’s place in the request.' },
            relevance_score: { type: 'number', minimum: 0, maximum: 1 },
            document: { type: 'object', required: ['text'], properties: { text: { type: 'string' } } },
          },
        },
      },
      usage: {
        type: 'object',
        required: ['prompt_tokens', 'total_tokens'],
        properties: { prompt_tokens: { type: 'integer', description: 'Every document’s tokens with the query’s.' }, total_tokens: { type: 'integer' } },
      },
    },
  },
};

const error = (description: string): ResponseObject => ({ description, content: { 'application/json': { schema: ref('Error') } } });

export const RERANK_OPERATION = (commonErrors: Record<string, ResponseObject>): Partial<OperationObject> => ({
  summary: 'Rerank documents (vLLM / Jina-compatible)',
  description: 'Queued to a worker serving `model` as a rank job; the documents of concurrent requests share the worker’s ranking contexts.',
  tags: ['OpenAI-compatible'],
  security: [{ apiKey: [] }],
  requestBody: { required: true, content: { 'application/json': { schema: ref('RerankRequest') } } },
  responses: {
    '200': { description: 'A score per document, best first.', content: { 'application/json': { schema: ref('RerankResponse') } } },
    '400': error('Invalid request; `param` names the field (`documents[3]`, `top_n`), or `model` when it does not rank.'),
    '404': error('Unknown model (`code: model_not_found`).'),
    '413': error('Request body too large.'),
    ...commonErrors,
  },
});
