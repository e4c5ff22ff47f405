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
  properties: {
    type: { type: 'string', enum: ['text'] },
    text: { type: 'string' },
    prompt_cache_breakpoint: {
      type: 'object',
      nullable: true,
      required: ['mode'],
      additionalProperties: false,
      description:
        'The prompt up to the end of this part is kept for later requests (a llama.cpp worker, PROMPT_CACHE); the latest breakpoint of a request counts.',
      properties: {
        mode: { type: 'string', enum: ['explicit'] },
        ttl: { type: 'string', enum: ['30m', '12h'], description: 'Accepted: a kept prompt lives until its sequence is needed for another.' },
      },
    },
  },
};

const usage: SchemaObject = {
  type: 'object',
  required: ['prompt_tokens', 'completion_tokens', 'total_tokens'],
  description: "Counted by the model's own tokenizer.",
  properties: {
    prompt_tokens: { type: 'integer' },
    completion_tokens: { type: 'integer' },
    total_tokens: { type: 'integer' },
    prompt_tokens_details: {
      type: 'object',
      description: 'Of the prompt tokens, those the engine had evaluated already (a llama.cpp worker keeps the start that prompts share: PROMPT_CACHE).',
      properties: { cached_tokens: { type: 'integer' } },
    },
  },
};

const finishReason: SchemaObject = {
  type: 'string',
  enum: ['stop', 'length', 'tool_calls'],
  description:
    '`stop`: the answer ended or hit a stop sequence (never sent). `length`: max_tokens or the context ran out. `tool_calls`: the model called tools.',
};

const toolCall: SchemaObject = {
  type: 'object',
  required: ['id', 'type', 'function'],
  properties: {
    id: { type: 'string', example: 'call_9fX…' },
    type: { type: 'string', enum: ['function'] },
    function: {
      type: 'object',
      required: ['name', 'arguments'],
      properties: { name: { type: 'string' }, arguments: { type: 'string', description: "JSON text that satisfies the tool's parameters schema." } },
    },
  },
};

/** The JSON Schema subset a grammar enforces exactly (docs/api.md, "Structured output"). */
const SCHEMA_SUBSET =
  'A JSON Schema reduced to what a grammar enforces exactly: type, properties, required, additionalProperties, items, prefixItems, min/maxItems, min/maxLength, min/maxProperties, enum, const, anyOf, $ref/$defs, format date-time/date/time; annotations are ignored; any other keyword is a 400 naming it.';

export const OPENAPI_SCHEMAS: Record<string, SchemaObject> = {
  ChatMessage: {
    type: 'object',
    required: ['role'],
    additionalProperties: false,
    properties: {
      role: {
        type: 'string',
        enum: ['system', 'developer', 'user', 'assistant', 'tool'],
        description: '`system` or `developer` only as the first message.',
      },
      content: {
        nullable: true,
        oneOf: [{ type: 'string' }, { type: 'array', items: textPart }],
        description: 'Required but for an assistant message with tool_calls.',
      },
      name: { type: 'string', maxLength: 256, description: 'Accepted and ignored.' },
      tool_calls: { type: 'array', items: toolCall, description: 'Assistant messages only: the calls it made.' },
      tool_call_id: { type: 'string', description: 'Tool messages only: the id of an earlier call this answers.' },
    },
  },
  Tool: {
    type: 'object',
    required: ['type', 'function'],
    properties: {
      type: { type: 'string', enum: ['function'] },
      function: {
        type: 'object',
        required: ['name'],
        properties: {
          name: { type: 'string', pattern: '^[a-zA-Z0-9_-]{1,64}$' },
          description: { type: 'string' },
          parameters: { type: 'object', description: `Of type object. ${SCHEMA_SUBSET}` },
          strict: { type: 'boolean', description: 'Accepted: arguments always satisfy the schema here.' },
        },
      },
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
      logit_bias: {
        type: 'object',
        nullable: true,
        maxProperties: 300,
        additionalProperties: { type: 'number', minimum: -100, maximum: 100 },
        description: "Token ids of the model's vocabulary to a bias added to their logits; -100 bans the token.",
      },
      logprobs: {
        type: 'boolean',
        default: false,
        nullable: true,
        description:
          "Each generated token's log probability (the model's own, before temperature, top_p and logit_bias) in `choices[].logprobs.content`. Not with tool calls.",
      },
      top_logprobs: { type: 'integer', minimum: 0, maximum: 20, nullable: true, description: 'Most likely alternatives per token; needs `logprobs: true`.' },
      n: { type: 'integer', minimum: 1, maximum: 8, default: 1, nullable: true, description: 'Choices, generated one after another, each with its own seed.' },
      tools: { type: 'array', maxItems: 128, items: ref('Tool'), nullable: true },
      tool_choice: {
        nullable: true,
        oneOf: [
          { type: 'string', enum: ['none', 'auto', 'required'] },
          {
            type: 'object',
            properties: { type: { type: 'string', enum: ['function'] }, function: { type: 'object', properties: { name: { type: 'string' } } } },
          },
        ],
        description: 'Default `auto`; `required` and a named function force a call from the first token.',
      },
      parallel_tool_calls: { type: 'boolean', default: true, nullable: true },
      response_format: {
        nullable: true,
        description: `text, json_object (any JSON object) or json_schema {name, schema, strict}: enforced by a grammar. ${SCHEMA_SUBSET}`,
        oneOf: [
          { type: 'object', properties: { type: { type: 'string', enum: ['text', 'json_object'] } } },
          {
            type: 'object',
            properties: {
              type: { type: 'string', enum: ['json_schema'] },
              json_schema: {
                type: 'object',
                required: ['name'],
                properties: { name: { type: 'string' }, schema: { type: 'object' }, strict: { type: 'boolean' } },
              },
            },
          },
        ],
      },
      user: { type: 'string', maxLength: 256, nullable: true, description: 'Accepted and ignored.' },
      metadata: {
        type: 'object',
        additionalProperties: { type: 'string', maxLength: 512 },
        maxProperties: 16,
        description: 'Kept with a stored completion (store: true), for filtering the list.',
      },
      store: {
        type: 'boolean',
        description: 'Keep the answer (GET /v1/chat/completions/{id}), finish it even if the client leaves, and make a stream resumable (Last-Event-ID).',
      },
      service_tier: {
        type: 'string',
        enum: ['auto', 'default', 'flex', 'priority', 'scale'],
        description:
          'priority (keys in PRIORITY_TIER_KEYS) is taken before default, default before flex, flex before batch lines; the answer names the tier used.',
      },
      prompt_cache_key: {
        type: 'string',
        description:
          'Requests with one key go to the worker that served it last (its prompt cache holds their start); without it, requests whose conversations begin alike do.',
      },
      prompt_cache_options: {
        type: 'object',
        properties: {
          mode: {
            type: 'string',
            enum: ['implicit', 'explicit'],
            description:
              'implicit (the default) keeps the whole conversation and its answer for the next turn (its start, system messages and tools, serves other requests too); explicit keeps only up to the latest prompt_cache_breakpoint, or nothing.',
          },
          ttl: { type: 'string', enum: ['30m'], description: 'Accepted: a kept prompt lives until its sequence is needed for another.' },
        },
      },
      safety_identifier: { type: 'string', description: 'Accepted and ignored.' },
      verbosity: { type: 'string', enum: ['low', 'medium', 'high'], description: 'Accepted and ignored.' },
      reasoning_effort: {
        type: 'string',
        description: "none and minimal turn a reasoning model's thinking off; the other efforts leave it as the chat template has it.",
      },
      modalities: { type: 'array', items: { type: 'string', enum: ['text'] }, description: 'Text only.' },
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
            index: { type: 'integer', minimum: 0, maximum: 7 },
            message: {
              type: 'object',
              required: ['role', 'content'],
              properties: {
                role: { type: 'string', enum: ['assistant'] },
                content: { type: 'string', nullable: true, description: 'null when the model only called tools.' },
                tool_calls: { type: 'array', items: toolCall },
              },
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
            index: { type: 'integer', minimum: 0, maximum: 7 },
            delta: {
              type: 'object',
              properties: {
                role: { type: 'string', enum: ['assistant'] },
                content: { type: 'string' },
                tool_calls: {
                  type: 'array',
                  description: "A call's first fragment has index, id, type and function.name; later ones index and more function.arguments.",
                  items: {
                    type: 'object',
                    properties: { index: { type: 'integer' }, id: { type: 'string' }, type: { type: 'string' }, function: { type: 'object' } },
                  },
                },
              },
            },
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
    description: 'OpenAI\'s error shape. After a stream has begun, an error comes as a last `data: {"error": …}` event before `data: [DONE]`.',
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
