import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import type { OpenAPIObject, OperationObject, ResponseObject } from '@nestjs/swagger';
import { EMBEDDINGS_OPERATION, EMBEDDINGS_SCHEMAS } from './openapi-embeddings';
import { RERANK_OPERATION, RERANK_SCHEMAS } from './openapi-rerank';
import { TEXT_COMPLETION_SCHEMAS, TEXT_COMPLETIONS_OPERATION } from './openapi-text-completions';
import { OPENAPI_SCHEMAS, ref } from './openapi-schemas';

const SECURITY = 'apiKey';

const error = (description: string): ResponseObject => ({ description, content: { 'application/json': { schema: ref('Error') } } });

const COMMON_ERRORS: Record<string, ResponseObject> = {
  '401': error('Missing or wrong API key.'),
  '429': error('Rate limit of this API key reached (see Retry-After and x-ratelimit-* headers).'),
  '500': error('Internal error; nothing internal is leaked.'),
  '503': error('Redis unreachable, queue full, no worker in time, or shutting down; see Retry-After.'),
};

const CHAT_COMPLETIONS: Partial<OperationObject> = {
  summary: 'Create a chat completion (OpenAI-compatible)',
  description:
    'Queued to a worker serving `model`. With `stream: true` the answer arrives as server-sent events of ChatCompletionChunk, ending with `data: [DONE]`.',
  tags: ['OpenAI-compatible'],
  security: [{ [SECURITY]: [] }],
  requestBody: { required: true, content: { 'application/json': { schema: ref('ChatCompletionRequest') } } },
  responses: {
    '200': {
      description: 'The completion; or, with `stream: true`, a stream of `data: <ChatCompletionChunk>` events.',
      content: {
        'application/json': { schema: ref('ChatCompletion') },
        'text/event-stream': { schema: { type: 'string', description: 'data: <ChatCompletionChunk JSON> frames, then data: [DONE]' } },
      },
    },
    '400': error('Invalid request; `param` names the offending field (e.g. `messages[1].role`).'),
    '404': error('Unknown model (`code: model_not_found`).'),
    '413': error('Request body too large.'),
    ...COMMON_ERRORS,
    '504': error('The generation ran past the time limit.'),
  },
};

const LIST_MODELS: Partial<OperationObject> = {
  summary: 'List the served models',
  tags: ['OpenAI-compatible'],
  security: [{ [SECURITY]: [] }],
  responses: { '200': { description: 'Models', content: { 'application/json': { schema: ref('ModelList') } } }, ...COMMON_ERRORS },
};

const GET_MODEL: Partial<OperationObject> = {
  summary: 'Retrieve one served model',
  tags: ['OpenAI-compatible'],
  security: [{ [SECURITY]: [] }],
  parameters: [{ name: 'model', in: 'path', required: true, schema: { type: 'string' }, description: 'May contain slashes (`org/name`).' }],
  responses: {
    '200': { description: 'The model', content: { 'application/json': { schema: ref('Model') } } },
    '404': error('Unknown model.'),
    ...COMMON_ERRORS,
  },
};

/**
 * Nest builds the paths from the controllers; the OpenAI-compatible operations then get their
 * hand-written request, response and error schemas (see openapi-schemas.ts).
 */
export function describeOpenAiRoutes(document: OpenAPIObject): OpenAPIObject {
  // The controller takes the rest of the path (`v1/models/*`), which Nest names `{path}`; kept in place, renamed.
  const paths = Object.fromEntries(
    Object.entries(document.paths).map(([path, item]) => (path === '/v1/models/{path}' ? ['/v1/models/{model}', item] : [path, item])),
  );
  const chat = paths['/v1/chat/completions']?.post;
  if (chat) Object.assign(chat, CHAT_COMPLETIONS);
  const embeddings = paths['/v1/embeddings']?.post;
  if (embeddings) Object.assign(embeddings, EMBEDDINGS_OPERATION(COMMON_ERRORS));
  const textCompletions = paths['/v1/completions']?.post;
  if (textCompletions) Object.assign(textCompletions, TEXT_COMPLETIONS_OPERATION(COMMON_ERRORS));
  for (const path of ['/v1/rerank', '/rerank']) {
    const rerank = paths[path]?.post;
    if (rerank) Object.assign(rerank, RERANK_OPERATION(COMMON_ERRORS));
  }
  const list = paths['/v1/models']?.get;
  if (list) Object.assign(list, LIST_MODELS);
  const one = paths['/v1/models/{model}']?.get;
  if (one) Object.assign(one, GET_MODEL);
  const schemas = { ...document.components?.schemas };
  delete schemas.ChatCompletionRequestDto;
  delete schemas.EmbeddingsRequestDto;
  delete schemas.RerankRequestDto;
  delete schemas.TextCompletionRequestDto;
  return {
    ...document,
    paths,
    components: { ...document.components, schemas: { ...schemas, ...OPENAPI_SCHEMAS, ...EMBEDDINGS_SCHEMAS, ...RERANK_SCHEMAS, ...TEXT_COMPLETION_SCHEMAS } },
  };
}

/** The service's OpenAPI document: UI at /docs, JSON at /docs-json; no API key needed to read them. */
export function setupApiDocs(app: INestApplication): void {
  const config = new DocumentBuilder()
    .setTitle('Queued chat completions')
    .setDescription(
      "OpenAI-compatible chat completions served through a queue. Point any OpenAI client at `base_url = <this server>/v1`. Operators' endpoints: /health/live, /health/ready, /metrics; Bull Board at /admin/queues (admin credential).",
    )
    .setVersion('0.1.0')
    .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'API key', description: 'One of the keys in API_KEYS.' }, SECURITY)
    .build();
  SwaggerModule.setup('docs', app, () => describeOpenAiRoutes(SwaggerModule.createDocument(app, config)), {
    jsonDocumentUrl: 'docs-json',
    customSiteTitle: 'Queued chat completions API',
  });
}
