import type { SchemaObject } from '@nestjs/swagger';

/**
 * Hand-written schemas of what this service accepts and answers: the subset of OpenAI's Chat
 * Completions API it implements (OpenAI's own document is the reference the tests validate
 * real responses against). Written out here rather than derived from the request DTO, whose
 * validation decorators cannot say "a string or an array of text parts" or "null means absent".
 */
export const ref = (name: string): { $ref: string } => ({ $ref: `#/components/schemas/${name}` });

const textPart: SchemaObject = {
  type: 'object',
  required: ['type', 'text'],
  properties: { type: { type: 'string', enum: ['text'] }, text: { type: 'string' } },
};

const usage: SchemaObject = {
  type: 'object',
  required: ['prompt_tokens', 'completion_tokens', 'total_tokens'],
  description: "Counted by the model's own tokenizer.",
  properties: {
    prompt_tokens: { type: 'integer' },
    completion_tokens: { type: 'integer' },
    total_tokens: { type: 'integer' },
  },
};

const finishReason: SchemaObject = {
  type: 'string',
  enum: ['stop', 'length'],
  description: '`stop`: the answer ended or hit a stop sequence (never sent). `length`: max_tokens or the context ran out.',
};

export const OPENAPI_SCHEMAS: Record<string, SchemaObject> = {
  ChatMessage: {
    type: 'object',
    required: ['role', 'content'],
    additionalProperties: false,
    properties: {
      role: {
        type: 'string',
        enum: ['system', 'developer', 'user', 'assistant'],
        description: '`system` or `developer` only as the first message.',
      },
      content: { oneOf: [{ type: 'string' }, { type: 'array', items: textPart }] },
    },
  },
  ChatCompletionRequest: {
    type: 'object',
    required: ['model', 'messages'],
    additionalProperties: false,
    description: 'Any other field is refused with 400 naming it in `param`. `null` counts as absent.',
    properties: {
      model: { type: 'string', maxLength: 256, description: 'A model this service serves (GET /v1/models).' },
      messages: { type: 'array', minItems: 1, maxItems: 2048, items: ref('ChatMessage') },
      temperature: { type: 'number', minimum: 0, maximum: 2, default: 1, nullable: true },
      top_p: { type: 'number', minimum: 0, maximum: 1, default: 1, nullable: true },
      max_tokens: { type: 'integer', minimum: 1, nullable: true, deprecated: true, description: 'Use max_completion_tokens.' },
      max_completion_tokens: { type: 'integer', minimum: 1, nullable: true },
      stream: { type: 'boolean', default: false, nullable: true },
      stream_options: {
        type: 'object',
        nullable: true,
        additionalProperties: false,
        properties: { include_usage: { type: 'boolean', description: 'Send a last chunk with usage before [DONE].' } },
      },
      stop: {
        nullable: true,
        oneOf: [{ type: 'string' }, { type: 'array', maxItems: 4, items: { type: 'string' } }],
      },
      frequency_penalty: { type: 'number', minimum: -2, maximum: 2, default: 0, nullable: true },
      presence_penalty: { type: 'number', minimum: -2, maximum: 2, default: 0, nullable: true },
      seed: { type: 'integer', nullable: true, description: 'Same seed, same request: same answer.' },
      n: { type: 'integer', enum: [1], nullable: true, description: 'Only one choice per request.' },
      user: { type: 'string', maxLength: 256, nullable: true },
    },
  },
  ChatCompletion: {
    type: 'object',
    required: ['id', 'object', 'created', 'model', 'choices', 'usage'],
    properties: {
      id: { type: 'string', example: 'chatcmpl-4bX2…' },
      object: { type: 'string', enum: ['chat.completion'] },
      created: { type: 'integer', description: 'Unix seconds.' },
      model: { type: 'string' },
      choices: {
        type: 'array',
        items: {
          type: 'object',
          required: ['index', 'message', 'finish_reason'],
          properties: {
            index: { type: 'integer', enum: [0] },
            message: {
              type: 'object',
              required: ['role', 'content'],
              properties: { role: { type: 'string', enum: ['assistant'] }, content: { type: 'string' } },
            },
            finish_reason: finishReason,
          },
        },
      },
      usage,
    },
  },
  ChatCompletionChunk: {
    type: 'object',
    description:
      'One `data: {...}` server-sent event of a stream: first the role, then content pieces, then a chunk with finish_reason, an optional usage chunk (empty choices), then `data: [DONE]`.',
    required: ['id', 'object', 'created', 'model', 'choices'],
    properties: {
      id: { type: 'string' },
      object: { type: 'string', enum: ['chat.completion.chunk'] },
      created: { type: 'integer' },
      model: { type: 'string' },
      choices: {
        type: 'array',
        items: {
          type: 'object',
          properties: {
            index: { type: 'integer', enum: [0] },
            delta: { type: 'object', properties: { role: { type: 'string', enum: ['assistant'] }, content: { type: 'string' } } },
            finish_reason: { ...finishReason, nullable: true },
          },
        },
      },
      usage: { ...usage, nullable: true },
    },
  },
  Model: {
    type: 'object',
    required: ['id', 'object', 'created', 'owned_by'],
    properties: {
      id: { type: 'string', example: 'tiny-chat' },
      object: { type: 'string', enum: ['model'] },
      created: { type: 'integer' },
      owned_by: { type: 'string' },
    },
  },
  ModelList: {
    type: 'object',
    required: ['object', 'data'],
    properties: { object: { type: 'string', enum: ['list'] }, data: { type: 'array', items: ref('Model') } },
  },
  Error: {
    type: 'object',
    required: ['error'],
    description: "OpenAI's error shape. After a stream has begun, an error comes as a last `data: {\"error\": …}` event before `data: [DONE]`.",
    properties: {
      error: {
        type: 'object',
        required: ['message', 'type', 'param', 'code'],
        properties: {
          message: { type: 'string' },
          type: { type: 'string', example: 'invalid_request_error' },
          param: { type: 'string', nullable: true, example: 'messages[1].role' },
          code: { type: 'string', nullable: true, example: 'model_not_found' },
        },
      },
    },
  },
};
