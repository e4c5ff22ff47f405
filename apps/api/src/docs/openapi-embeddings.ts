import type { OperationObject, ResponseObject, SchemaObject } from '@nestjs/swagger';
import { ref } from './openapi-schemas';

const tokenIds: SchemaObject = { type: 'array', items: { type: 'integer', minimum: 0 }, minItems: 1 };

/** `POST /v1/embeddings`'s request and answer, as this service takes and gives them. */
export const EMBEDDINGS_SCHEMAS: Record<string, SchemaObject> = {
  EmbeddingsRequest: {
    type: 'object',
    required: ['model', 'input'],
    properties: {
      model: { type: 'string', example: 'tiny-embed', description: 'An embedding model (or a generative model whose worker has EMBEDDINGS=true).' },
      input: {
        description: 'One input or up to 2048, none empty: texts, or token ids of the model.',
        oneOf: [
          { type: 'string', minLength: 1 },
          { type: 'array', items: { type: 'string', minLength: 1 }, minItems: 1, maxItems: 2048 },
          tokenIds,
          { type: 'array', items: tokenIds, minItems: 1, maxItems: 2048 },
        ],
      },
      encoding_format: { type: 'string', enum: ['float', 'base64'], default: 'float', description: 'base64: little-endian float32.' },
      dimensions: { type: 'integer', description: 'Refused (400): no model here is trained to be cut to fewer dimensions.' },
      user: { type: 'string' },
      normalize: { type: 'boolean', default: true, description: 'Unit vectors, as OpenAI gives (default); false: the model’s own vectors.' },
    },
  },
  EmbeddingList: {
    type: 'object',
    required: ['object', 'data', 'model', 'usage'],
    properties: {
      object: { type: 'string', enum: ['list'] },
      data: {
        type: 'array',
        items: {
          type: 'object',
          required: ['object', 'index', 'embedding'],
          properties: {
            object: { type: 'string', enum: ['embedding'] },
            index: { type: 'integer' },
            embedding: {
              oneOf: [
                { type: 'array', items: { type: 'number' } },
                { type: 'string', description: 'base64 of little-endian float32' },
              ],
            },
          },
        },
      },
      model: { type: 'string' },
      usage: {
        type: 'object',
        required: ['prompt_tokens', 'total_tokens'],
        properties: { prompt_tokens: { type: 'integer' }, total_tokens: { type: 'integer' } },
      },
    },
  },
};

const error = (description: string): ResponseObject => ({ description, content: { 'application/json': { schema: ref('Error') } } });

export const EMBEDDINGS_OPERATION = (commonErrors: Record<string, ResponseObject>): Partial<OperationObject> => ({
  summary: 'Create embeddings (OpenAI-compatible)',
  description: 'Queued to a worker serving `model` as an embed job; the inputs of concurrent requests share the worker’s embedding contexts.',
  tags: ['OpenAI-compatible'],
  security: [{ apiKey: [] }],
  requestBody: { required: true, content: { 'application/json': { schema: ref('EmbeddingsRequest') } } },
  responses: {
    '200': { description: 'One vector per input, in input order.', content: { 'application/json': { schema: ref('EmbeddingList') } } },
    '400': error('Invalid request; `param` names the field (`input[3]`, `dimensions`), or `model` when it does not embed.'),
    '404': error('Unknown model (`code: model_not_found`).'),
    '413': error('Request body too large.'),
    ...commonErrors,
  },
});
