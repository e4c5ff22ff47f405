import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { OpenAIEmbeddings } from '@langchain/openai';
import { embed, embedMany } from 'ai';
import { isFinished } from '@app/api';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI, { toFile } from 'openai';
import { assertMatchesEmbeddingsSchema } from './support/openai-embeddings-schema';
import { ServiceStack, STACK_API_KEY, waitFor } from './support/service-stack';

const EMBED_MODEL = 'tiny-embed';
const CHAT_MODEL = 'tiny-chat';
/** tiny-embed's vectors (the test shape's width). */
const DIMENSIONS = 64;
/** The embedding worker's context: an input of more tokens than this is refused. */
const CONTEXT_SIZE = 256;

const norm = (vector: number[]): number => Math.sqrt(vector.reduce((sum, value) => sum + value * value, 0));
const maxDifference = (a: number[], b: number[]): number => Math.max(...a.map((value, index) => Math.abs(value - b[index])));

const SENTENCES = Array.from(
  { length: 64 },
  (_, index) => `The ${['white rabbit', 'mad hatter', 'cheshire cat', 'dormouse'][index % 4]} said ${index} things at tea.`,
);

/**
 * `POST /v1/embeddings` on the real llama worker, with a generated embedding model (a decoder with
 * mean pooling): the openai package (its default base64 and `float`), the AI SDK's embed and
 * embedMany, LangChain's OpenAIEmbeddings; vectors of unit norm, the same alone, in a batch and
 * under concurrent load; and each bad request a 400 naming its field. The same on both engines that
 * embed: node-llama-cpp in the worker, and llama.cpp's own server (ENGINE=llama-server, `--embeddings`).
 */
describe.each(['llama', 'llama-server'] as const)('Embeddings on ENGINE=%s', (engine) => {
  let stack: ServiceStack;
  let client: OpenAI;
  const filesDir = mkdtempSync(join(tmpdir(), 'embedding-batches-'));

  beforeAll(async () => {
    const apiEnv = { FILES_DIR: filesDir };
    stack = await ServiceStack.start({ name: `embeddings-${engine}`, workers: 0, models: [EMBED_MODEL, CHAT_MODEL], parallelSequences: 4, apiEnv });
    await stack.addWorker({ ENGINE: engine, CONTEXT_SIZE: String(CONTEXT_SIZE), EMBEDDING_CONTEXTS: '2' }, EMBED_MODEL);
    await stack.addWorker({}, CHAT_MODEL);
    client = new OpenAI({ baseURL: stack.baseUrl, apiKey: STACK_API_KEY, maxRetries: 0 });
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
    rmSync(filesDir, { recursive: true, force: true });
  });

  const post = async (body: unknown): Promise<{ status: number; body: Record<string, unknown> }> => {
    const response = await fetch(`${stack.baseUrl}/embeddings`, {
      method: 'POST',
      headers: { authorization: `Bearer ${STACK_API_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };

  it('embeds with the openai package: base64 by default, decoded by the client, the same as float', async () => {
    const input = ['The rabbit ran down the hole.', 'Alice followed it.'];
    const decoded = await client.embeddings.create({ model: EMBED_MODEL, input });
    expect(decoded.object).toBe('list');
    expect(decoded.model).toBe(EMBED_MODEL);
    expect(decoded.data.map(({ index }) => index)).toEqual([0, 1]);
    expect(decoded.usage.prompt_tokens).toBeGreaterThan(4);
    expect(decoded.usage.total_tokens).toBe(decoded.usage.prompt_tokens);

    const float = await client.embeddings.create({ model: EMBED_MODEL, input, encoding_format: 'float' });
    assertMatchesEmbeddingsSchema('CreateEmbeddingResponse', float);
    for (const [index, { embedding }] of float.data.entries()) {
      expect(embedding).toHaveLength(DIMENSIONS);
      expect(norm(embedding)).toBeCloseTo(1, 5);
      expect(maxDifference(embedding, decoded.data[index].embedding)).toBeLessThan(1e-6);
    }
    // Different texts, different vectors.
    expect(maxDifference(float.data[0].embedding, float.data[1].embedding)).toBeGreaterThan(1e-3);
  });

  it('gives an input the same vector alone, in a batch of 64 and among concurrent requests', async () => {
    const alone = await client.embeddings.create({ model: EMBED_MODEL, input: SENTENCES[5], encoding_format: 'float' });
    const batch = await client.embeddings.create({ model: EMBED_MODEL, input: SENTENCES, encoding_format: 'float' });
    expect(batch.data).toHaveLength(64);
    expect(batch.data.map(({ index }) => index)).toEqual(SENTENCES.map((_, index) => index));
    const concurrent = await Promise.all(
      Array.from({ length: 8 }, (_, request) => client.embeddings.create({ model: EMBED_MODEL, input: SENTENCES.slice(request * 8, request * 8 + 8) })),
    );
    const [only] = alone.data;
    expect(maxDifference(only.embedding, batch.data[5].embedding)).toBeLessThan(1e-5);
    expect(maxDifference(only.embedding, concurrent[0].data[5].embedding)).toBeLessThan(1e-5);
    for (const [request, answer] of concurrent.entries()) {
      for (const [index, { embedding }] of answer.data.entries()) {
        expect(maxDifference(embedding, batch.data[request * 8 + index].embedding)).toBeLessThan(1e-5);
      }
    }
  });

  it('embeds token ids as it embeds text, and gives raw vectors with normalize: false', async () => {
    const tokens = await client.embeddings.create({
      model: EMBED_MODEL,
      input: [
        [300, 301, 302],
        [400, 401],
      ],
      encoding_format: 'float',
    });
    expect(tokens.data).toHaveLength(2);
    expect(tokens.usage.prompt_tokens).toBe(5);
    expect(norm(tokens.data[0].embedding)).toBeCloseTo(1, 5);

    const raw = await post({ model: EMBED_MODEL, input: SENTENCES[0], encoding_format: 'float', normalize: false });
    expect(raw.status).toBe(200);
    const rawVector = (raw.body.data as Array<{ embedding: number[] }>)[0].embedding;
    const unit = await client.embeddings.create({ model: EMBED_MODEL, input: SENTENCES[0], encoding_format: 'float' });
    expect(Math.abs(norm(rawVector) - 1)).toBeGreaterThan(1e-3);
    expect(
      maxDifference(
        rawVector.map((value) => value / norm(rawVector)),
        unit.data[0].embedding,
      ),
    ).toBeLessThan(1e-5);
  });

  it("embeds with the AI SDK's openai-compatible provider (embed, embedMany)", async () => {
    const provider = createOpenAICompatible({ name: 'queued', baseURL: stack.baseUrl, apiKey: STACK_API_KEY });
    const model = provider.embeddingModel(EMBED_MODEL);
    const one = await embed({ model, value: SENTENCES[1], maxRetries: 0 });
    expect(one.embedding).toHaveLength(DIMENSIONS);
    expect(one.usage.tokens).toBeGreaterThan(0);
    const many = await embedMany({ model, values: SENTENCES.slice(0, 10), maxRetries: 0 });
    expect(many.embeddings).toHaveLength(10);
    expect(maxDifference(many.embeddings[1], one.embedding)).toBeLessThan(1e-5);
  });

  it("embeds with LangChain's OpenAIEmbeddings (documents and a query)", async () => {
    const embeddings = new OpenAIEmbeddings({ model: EMBED_MODEL, apiKey: STACK_API_KEY, configuration: { baseURL: stack.baseUrl }, maxRetries: 0 });
    const documents = await embeddings.embedDocuments(SENTENCES.slice(0, 3));
    expect(documents).toHaveLength(3);
    const query = await embeddings.embedQuery(SENTENCES[2]);
    expect(query).toHaveLength(DIMENSIONS);
    expect(maxDifference(query, documents[2])).toBeLessThan(1e-5);
  });

  it('refuses a chat model asked for embeddings: at admission once its worker is known, by the worker before that', async () => {
    // Until the API has seen the chat worker's announcement the job is queued, and that worker refuses it.
    const codes = new Set<string>();
    await waitFor('the API to know what the chat worker runs', async () => {
      const answer = await post({ model: CHAT_MODEL, input: 'hello' });
      expect(answer.status).toBe(400);
      const { code, param } = answer.body.error as { code: string; param: string };
      expect(param).toBe('model');
      codes.add(code);
      return code === 'model_not_supported';
    });
    expect([...codes].every((code) => code === 'model_not_supported' || code === 'unsupported_parameter')).toBe(true);
  });

  it('refuses bad input with a 400 naming the field, and queues nothing for it', async () => {
    const queued = async (): Promise<number> => {
      const counts = await Promise.all([EMBED_MODEL, CHAT_MODEL].map((model) => stack.queue(model).getJobCounts()));
      return counts.flatMap((count) => Object.values(count)).reduce((sum, count) => sum + count, 0);
    };
    const before = await queued();
    const cases: Array<[unknown, string, number?]> = [
      [{ model: EMBED_MODEL, input: '' }, 'input'],
      [{ model: EMBED_MODEL, input: ['fine', ''] }, 'input[1]'],
      [{ model: EMBED_MODEL, input: [] }, 'input'],
      [{ model: EMBED_MODEL, input: Array.from({ length: 2049 }, () => 'x') }, 'input'],
      [{ model: EMBED_MODEL, input: ['words', 7] }, 'input'],
      [
        {
          model: EMBED_MODEL,
          input: [
            [1, 2],
            [3, 999_999],
          ],
        },
        'input[1]',
      ],
      [{ model: EMBED_MODEL, input: 'hello', dimensions: 32 }, 'dimensions'],
      [{ model: EMBED_MODEL, input: 'hello', encoding_format: 'int8' }, 'encoding_format'],
      [{ model: CHAT_MODEL, input: 'hello' }, 'model'],
    ];
    for (const [body, param] of cases) {
      const answer = await post(body);
      expect({ body, status: answer.status }).toEqual({ body, status: 400 });
      assertMatchesEmbeddingsSchema('ErrorResponse', answer.body);
      expect({ body, param: (answer.body.error as { param: string }).param }).toEqual({ body, param });
    }
    expect(await queued()).toBe(before);

    // And the other way round: an embedding model does not chat.
    await expect(client.chat.completions.create({ model: EMBED_MODEL, messages: [{ role: 'user', content: 'Hi' }] })).rejects.toMatchObject({
      status: 400,
      param: 'model',
      code: 'model_not_supported',
    });
  });

  it('runs /v1/embeddings lines in a batch: each answered with the list the request would get, a bad one in the error file', async () => {
    const bodies = [
      { model: EMBED_MODEL, input: SENTENCES.slice(0, 3), encoding_format: 'float' },
      { model: EMBED_MODEL, input: SENTENCES[3], encoding_format: 'base64' },
      { model: EMBED_MODEL, input: ['fine', ''] },
    ];
    const text = bodies.map((body, index) => JSON.stringify({ custom_id: `line-${index}`, method: 'POST', url: '/v1/embeddings', body })).join('\n');
    const file = await client.files.create({ file: await toFile(Buffer.from(text), 'embeddings.jsonl'), purpose: 'batch' });
    const created = await client.batches.create({ input_file_id: file.id, endpoint: '/v1/embeddings', completion_window: '24h' });
    const batch = await waitFor('the batch to end', async () => {
      const current = await client.batches.retrieve(created.id);
      return isFinished(current.status) ? current : undefined;
    });
    expect(batch.status).toBe('completed');
    expect(batch.request_counts).toEqual({ total: 3, completed: 2, failed: 1 });
    const lines = async (id: string | null | undefined) =>
      (await (await client.files.content(id!)).text())
        .trimEnd()
        .split('\n')
        .map((json) => JSON.parse(json) as { custom_id: string; response: { status_code: number; body: Record<string, unknown> } | null; error: unknown });
    const [first, second] = await lines(batch.output_file_id);
    expect(first.custom_id).toBe('line-0');
    assertMatchesEmbeddingsSchema('CreateEmbeddingResponse', first.response?.body);
    const direct = await client.embeddings.create({ model: EMBED_MODEL, input: SENTENCES.slice(0, 3), encoding_format: 'float' });
    const answered = first.response?.body.data as Array<{ embedding: number[] }>;
    answered.forEach(({ embedding }, index) => expect(maxDifference(embedding, direct.data[index].embedding)).toBeLessThan(1e-5));
    expect(typeof (second.response?.body.data as Array<{ embedding: unknown }>)[0].embedding).toBe('string');
    const [failed] = await lines(batch.error_file_id);
    expect(failed).toMatchObject({ custom_id: 'line-2', response: { status_code: 400, body: { error: { param: 'input[1]' } } } });
  });

  it('refuses an input longer than the context with the context error, naming input', async () => {
    const answer = await post({ model: EMBED_MODEL, input: ['short', ' a'.repeat(CONTEXT_SIZE + 10)] });
    expect(answer.status).toBe(400);
    assertMatchesEmbeddingsSchema('ErrorResponse', answer.body);
    expect(answer.body.error).toMatchObject({ code: 'context_length_exceeded', param: 'input' });
    expect((answer.body.error as { message: string }).message).toMatch(`maximum context length is ${CONTEXT_SIZE} tokens`);
  });
});
