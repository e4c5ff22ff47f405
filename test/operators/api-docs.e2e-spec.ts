import { e2eStack } from '../support/stack-env';
import { serverRoot } from './prometheus-text';

interface OpenApiDocument {
  openapi: string;
  paths: Record<string, Record<string, { security?: unknown[]; requestBody?: unknown; responses: Record<string, unknown> }>>;
  components: { schemas: Record<string, unknown>; securitySchemes: Record<string, { type: string; scheme: string }> };
}

/** The service's own OpenAPI document, readable without an API key. */
describe('API docs', () => {
  const root = serverRoot(e2eStack().apiUrls[0]);

  it('serves Swagger UI at /docs without an API key', async () => {
    const response = await fetch(`${root}/docs`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await response.text()).toContain('swagger-ui');
  });

  it('serves the OpenAPI document at /docs-json with the OpenAI-compatible operations described', async () => {
    const response = await fetch(`${root}/docs-json`);
    expect(response.status).toBe(200);
    const document = (await response.json()) as OpenApiDocument;
    expect(document.openapi).toMatch(/^3\./);
    expect(Object.keys(document.paths)).toEqual(
      expect.arrayContaining(['/v1/chat/completions', '/v1/embeddings', '/v1/models', '/v1/models/{model}', '/health/live', '/health/ready', '/metrics']),
    );
    expect(document.paths['/v1/completions'].post.requestBody).toEqual({
      required: true,
      content: { 'application/json': { schema: { $ref: '#/components/schemas/TextCompletionRequest' } } },
    });
    for (const path of ['/v1/rerank', '/rerank']) {
      expect(document.paths[path].post.requestBody).toEqual({
        required: true,
        content: { 'application/json': { schema: { $ref: '#/components/schemas/RerankRequest' } } },
      });
    }
    expect(document.paths['/v1/embeddings'].post.requestBody).toEqual({
      required: true,
      content: { 'application/json': { schema: { $ref: '#/components/schemas/EmbeddingsRequest' } } },
    });
    const create = document.paths['/v1/chat/completions'].post;
    expect(create.requestBody).toEqual({
      required: true,
      content: { 'application/json': { schema: { $ref: '#/components/schemas/ChatCompletionRequest' } } },
    });
    expect(Object.keys(create.responses)).toEqual(expect.arrayContaining(['200', '400', '401', '404', '413', '429', '500', '503']));
    expect(create.security).toEqual([{ apiKey: [] }]);
    expect(document.components.securitySchemes.apiKey).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(Object.keys(document.components.schemas)).toEqual(
      expect.arrayContaining([
        'ChatCompletionRequest',
        'ChatMessage',
        'ChatCompletion',
        'ChatCompletionChunk',
        'EmbeddingsRequest',
        'EmbeddingList',
        'RerankRequest',
        'TextCompletionRequest',
        'TextCompletion',
        'RerankResponse',
        'Model',
        'ModelList',
        'Error',
      ]),
    );
    // Every $ref points at a schema that exists.
    for (const [, name] of JSON.stringify(document).matchAll(/"#\/components\/schemas\/([^"]+)"/g)) {
      expect(document.components.schemas).toHaveProperty(name);
    }
  });
});
