import type { OperationObject, ResponseObject, SchemaObject } from '@nestjs/swagger';
import { MAX_CHOICES } from '@app/contracts';
import { ref } from './openapi-schemas';

const tokenIds: SchemaObject = { type: 'array', items: { type: 'integer', minimum: 0 }, minItems: 1 };

/** `POST /v1/completions`'s request and answer (OpenAI's legacy completions), as this service takes and gives them. */
export const TEXT_COMPLETION_SCHEMAS: Record<string, SchemaObject> = {
  TextCompletionRequest: {
    type: 'object',
    required: ['model', 'prompt'],
    properties: {
      model: { type: 'string', example: 'tiny-chat' },
      prompt: {
        description: 'One prompt or up to 64, none empty, evaluated as they are (no chat template): texts, or token ids of the model.',
        oneOf: [{ type: 'string', minLength: 1 }, { type: 'array', items: { type: 'string', minLength: 1 } }, tokenIds, { type: 'array', items: tokenIds }],
      },
      max_tokens: { type: 'integer', minimum: 0, default: 16, description: '0 with `echo` and `logprobs` scores the prompt alone.' },
      temperature: { type: 'number', minimum: 0, maximum: 2, default: 1 },
      top_p: { type: 'number', minimum: 0, maximum: 1, default: 1 },
      n: { type: 'integer', minimum: 1, maximum: MAX_CHOICES, default: 1, description: 'Answers per prompt; choice `p * n + c` is prompt p’s answer c.' },
      best_of: { type: 'integer', description: 'Only equal to `n` (400 otherwise): every answer generated is answered.' },
      stream: { type: 'boolean' },
      stream_options: { type: 'object', properties: { include_usage: { type: 'boolean' } } },
      logprobs: {
        type: 'integer',
        minimum: 0,
        maximum: 5,
        description: 'Each token’s log probability and this many alternatives (the token itself among them).',
      },
      echo: { type: 'boolean', description: 'Each answer begins with its prompt (scored too, with `logprobs`).' },
      stop: { oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' }, maxItems: 4 }] },
      frequency_penalty: { type: 'number', minimum: -2, maximum: 2 },
      presence_penalty: { type: 'number', minimum: -2, maximum: 2 },
      logit_bias: { type: 'object', additionalProperties: { type: 'number', minimum: -100, maximum: 100 } },
      seed: { type: 'integer' },
      suffix: { type: 'string', description: 'Fill-in-the-middle, on a model with FIM tokens (400 naming it on any other).' },
      user: { type: 'string' },
    },
  },
  TextCompletion: {
    type: 'object',
    required: ['id', 'object', 'created', 'model', 'choices'],
    description: 'The whole answer, and each chunk of a stream (the same shape; a chunk’s `finish_reason` is null until its choice ends).',
    properties: {
      id: { type: 'string', example: 'cmpl-0193…' },
      object: { type: 'string', enum: ['text_completion'] },
      created: { type: 'integer' },
      model: { type: 'string' },
      choices: {
        type: 'array',
        items: {
          type: 'object',
          required: ['index', 'text', 'logprobs', 'finish_reason'],
          properties: {
            index: { type: 'integer' },
            text: { type: 'string' },
            finish_reason: { type: 'string', enum: ['stop', 'length'], nullable: true },
            logprobs: {
              type: 'object',
              nullable: true,
              properties: {
                tokens: { type: 'array', items: { type: 'string' } },
                token_logprobs: { type: 'array', items: { type: 'number', nullable: true } },
                top_logprobs: { type: 'array', items: { type: 'object', nullable: true, additionalProperties: { type: 'number' } } },
                text_offset: { type: 'array', items: { type: 'integer' }, description: 'Characters into the choice’s own text.' },
              },
            },
          },
        },
      },
      usage: {
        type: 'object',
        properties: { prompt_tokens: { type: 'integer' }, completion_tokens: { type: 'integer' }, total_tokens: { type: 'integer' } },
      },
    },
  },
};

const error = (description: string): ResponseObject => ({ description, content: { 'application/json': { schema: ref('Error') } } });

export const TEXT_COMPLETIONS_OPERATION = (commonErrors: Record<string, ResponseObject>): Partial<OperationObject> => ({
  summary: 'Create a completion of plain prompts (OpenAI-compatible, legacy)',
  description: 'Queued to a worker serving `model` as a generate job of plain prompts (no chat template); JSON, or server-sent `text_completion` chunks.',
  tags: ['OpenAI-compatible'],
  security: [{ apiKey: [] }],
  requestBody: { required: true, content: { 'application/json': { schema: ref('TextCompletionRequest') } } },
  responses: {
    '200': {
      description: 'The answer, or its stream.',
      content: { 'application/json': { schema: ref('TextCompletion') }, 'text/event-stream': { schema: { type: 'string' } } },
    },
    '400': error('Invalid request; `param` names the field (`prompt[1]`, `suffix`, `best_of`), or `model` when it does not generate.'),
    '404': error('Unknown model (`code: model_not_found`).'),
    '413': error('Request body too large.'),
    ...commonErrors,
  },
});
