import { resolve } from 'node:path';
import OpenAI from 'openai';
import { LlamaServerProcess } from '@app/worker/engine';
import { REPO_ROOT } from '../tools/local-stack/services';
import { ServiceStack, STACK_API_KEY, waitFor } from './support/service-stack';

const RANK_MODEL = 'tiny-rank';
const CHAT_MODEL = 'tiny-chat';
/** The ranking worker's context: a query and document of more tokens than this are refused. */
const CONTEXT_SIZE = 256;

const QUERY = 'Where did the white rabbit go?';
const DOCUMENTS = Array.from(
  { length: 64 },
  (_, index) =>
    `The ${['white rabbit', 'mad hatter', 'cheshire cat', 'dormouse'][index % 4]} went ${['down the hole', 'to tea', 'away'][index % 3]} ${index} times.`,
);

interface RerankAnswer {
  id: string;
  model: string;
  results: Array<{ index: number; relevance_score: number; document?: { text: string } }>;
  usage: { prompt_tokens: number; total_tokens: number };
}

/** The scores in request order. */
const scoresOf = (answer: RerankAnswer): number[] => {
  const scores: number[] = [];
  for (const { index, relevance_score: score } of answer.results) scores[index] = score;
  return scores;
};

/** Scores in request order and the tokens evaluated, as an engine gives them on its own. */
interface AloneRanking {
  scores: number[];
  promptTokens: number;
}

/** How node-llama-cpp scores the pairs on its own, one ranking context, as a user of it would call it. */
async function nodeLlamaCppAlone(query: string, documents: string[]): Promise<AloneRanking> {
  const { getLlama } = await import('node-llama-cpp');
  const llama = await getLlama({ gpu: false, build: 'never' });
  try {
    const model = await llama.loadModel({ modelPath: resolve(REPO_ROOT, `models/${RANK_MODEL}.gguf`) });
    const context = await model.createRankingContext({ contextSize: CONTEXT_SIZE });
    const scores = await context.rankAll(query, documents);
    return { scores, promptTokens: documents.reduce((sum, document) => sum + context.calculateInputLength(query, document), 0) };
  } finally {
    await llama.dispose();
  }
}

/**
 * How llama.cpp's own server scores the pairs on its own (`--reranking`, its `/rerank`), in request
 * order. Qwen3's graph ends in a softmax, so its scores are probabilities as they come.
 */
async function llamaServerAlone(query: string, documents: string[]): Promise<AloneRanking> {
  const server = await LlamaServerProcess.start({
    binary: process.env.LLAMA_SERVER_BIN ?? '',
    modelPath: resolve(REPO_ROOT, `models/${RANK_MODEL}.gguf`),
    slots: 1,
    contextSize: CONTEXT_SIZE,
    threads: 1,
    gpu: 'false',
    embeddings: 'ranks',
    log: () => undefined,
    onLost: () => undefined,
  });
  try {
    const response = await fetch(`${server.url}/rerank`, { method: 'POST', body: JSON.stringify({ query, documents }) });
    const answer = (await response.json()) as RerankAnswer;
    return { scores: scoresOf(answer), promptTokens: answer.usage.prompt_tokens };
  } finally {
    await server.stop();
  }
}

/**
 * `POST /v1/rerank` and `/rerank` on the real worker, with a generated reranker (Qwen3's layout,
 * rank pooling and a two-label classifier head, as Qwen3-Reranker): the vLLM/Jina answer best
 * first, the scores the engine gives on its own, the same alone, among 64 and under concurrent
 * load; `top_n`, `return_documents`, `{text}` documents; each bad request a 400 naming its field,
 * with nothing queued. The same on both engines that rank: node-llama-cpp in the worker, and
 * llama.cpp's own server (ENGINE=llama-server, `--reranking`), each against itself alone (they lay
 * a pair out differently: docs/operations.md).
 */
describe.each([
  ['llama', nodeLlamaCppAlone],
  ['llama-server', llamaServerAlone],
] as const)('Rerank on ENGINE=%s', (engine, engineAlone) => {
  let stack: ServiceStack;

  beforeAll(async () => {
    stack = await ServiceStack.start({ name: `rerank-${engine}`, workers: 0, models: [RANK_MODEL, CHAT_MODEL] });
    await stack.addWorker({ ENGINE: engine, CONTEXT_SIZE: String(CONTEXT_SIZE), EMBEDDING_CONTEXTS: '2' }, RANK_MODEL);
    await stack.addWorker({}, CHAT_MODEL);
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
  });

  const post = async (body: unknown, path = '/v1/rerank'): Promise<{ status: number; body: Record<string, unknown> }> => {
    const response = await fetch(`${new URL(stack.baseUrl).origin}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${STACK_API_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
  const rerank = async (body: Record<string, unknown>, path?: string): Promise<RerankAnswer> => {
    const answer = await post({ model: RANK_MODEL, query: QUERY, ...body }, path);
    expect({ status: answer.status, error: answer.body.error }).toEqual({ status: 200, error: undefined });
    return answer.body as unknown as RerankAnswer;
  };

  it("answers in vLLM's shape, best first, with the engine's own scores and token count, on /v1/rerank and /rerank", async () => {
    const documents = DOCUMENTS.slice(0, 6);
    const answer = await rerank({ documents });
    expect(answer.id).toMatch(/^rerank-/);
    expect(answer.model).toBe(RANK_MODEL);
    expect(answer.results.map(({ index }) => index).sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5]);
    const scores = answer.results.map(({ relevance_score: score }) => score);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
    for (const { index, relevance_score: score, document } of answer.results) {
      expect(score).toBeGreaterThan(0);
      expect(score).toBeLessThan(1);
      expect(document).toEqual({ text: documents[index] });
    }
    expect(answer.usage.prompt_tokens).toBeGreaterThan(documents.length * 8);
    expect(answer.usage.total_tokens).toBe(answer.usage.prompt_tokens);
    // The random weights score differently for different documents.
    expect(new Set(scores).size).toBeGreaterThan(1);

    const alone = await engineAlone(QUERY, documents);
    scoresOf(answer).forEach((score, index) => expect(Math.abs(score - alone.scores[index])).toBeLessThan(1e-5));
    expect(answer.usage.prompt_tokens).toBe(alone.promptTokens);
    const root = await rerank({ documents }, '/rerank');
    expect(scoresOf(root)).toEqual(scoresOf(answer));
  });

  it('gives a document the same score alone, among 64 and among concurrent requests', async () => {
    const all = scoresOf(await rerank({ documents: DOCUMENTS }));
    expect(all).toHaveLength(64);
    const alone = scoresOf(await rerank({ documents: [DOCUMENTS[9]] }));
    expect(Math.abs(alone[0] - all[9])).toBeLessThan(1e-5);
    const concurrent = await Promise.all(Array.from({ length: 8 }, (_, request) => rerank({ documents: DOCUMENTS.slice(request * 8, request * 8 + 8) })));
    for (const [request, answer] of concurrent.entries()) {
      scoresOf(answer).forEach((score, index) => expect(Math.abs(score - all[request * 8 + index])).toBeLessThan(1e-5));
    }
  });

  it('answers the best top_n, without documents when asked, and takes {text} documents', async () => {
    const documents = DOCUMENTS.slice(0, 10);
    const full = await rerank({ documents });
    const top = await rerank({ documents: documents.map((text) => ({ text })), top_n: 3, return_documents: false });
    expect(top.results).toEqual(full.results.slice(0, 3).map(({ index, relevance_score: score }) => ({ index, relevance_score: score })));
    // More than there are, or 0 (vLLM's "all"), is every document.
    expect((await rerank({ documents, top_n: 50 })).results).toHaveLength(10);
    expect((await rerank({ documents, top_n: 0 })).results).toHaveLength(10);
  });

  it('refuses a chat model asked to rerank, and a reranker asked to chat or embed, naming the model', async () => {
    await waitFor('the API to know what the chat worker runs', async () => {
      const answer = await post({ model: CHAT_MODEL, query: QUERY, documents: ['a document'] });
      expect(answer.status).toBe(400);
      expect((answer.body.error as { param: string }).param).toBe('model');
      return (answer.body.error as { code: string }).code === 'model_not_supported';
    });
    const client = new OpenAI({ baseURL: stack.baseUrl, apiKey: STACK_API_KEY, maxRetries: 0 });
    const refused = { status: 400, param: 'model', code: 'model_not_supported' };
    await expect(client.chat.completions.create({ model: RANK_MODEL, messages: [{ role: 'user', content: 'Hi' }] })).rejects.toMatchObject(refused);
    await expect(client.embeddings.create({ model: RANK_MODEL, input: 'Hi' })).rejects.toMatchObject(refused);
  });

  it('refuses bad input with a 400 naming the field, and queues nothing for it', async () => {
    const queued = async (): Promise<number> => {
      const counts = await Promise.all([RANK_MODEL, CHAT_MODEL].map((model) => stack.queue(model).getJobCounts()));
      return counts.flatMap((count) => Object.values(count)).reduce((sum, count) => sum + count, 0);
    };
    const before = await queued();
    const cases: Array<[unknown, string]> = [
      [{ model: RANK_MODEL, query: QUERY, documents: [] }, 'documents'],
      [{ model: RANK_MODEL, query: QUERY, documents: ['fine', ''] }, 'documents[1]'],
      [{ model: RANK_MODEL, query: QUERY, documents: ['fine', { text: '' }] }, 'documents[1]'],
      [{ model: RANK_MODEL, query: QUERY, documents: ['fine', 7] }, 'documents'],
      [{ model: RANK_MODEL, query: QUERY, documents: Array.from({ length: 1001 }, () => 'x') }, 'documents'],
      [{ model: RANK_MODEL, documents: ['fine'] }, 'query'],
      [{ model: RANK_MODEL, query: '', documents: ['fine'] }, 'query'],
      [{ model: RANK_MODEL, query: QUERY, documents: ['fine'], top_n: -1 }, 'top_n'],
      [{ model: RANK_MODEL, query: QUERY, documents: ['fine'], return_documents: 'yes' }, 'return_documents'],
      [{ model: RANK_MODEL, query: QUERY, documents: ['fine'], truncate_prompt_tokens: 10 }, 'truncate_prompt_tokens'],
      [{ model: CHAT_MODEL, query: QUERY, documents: ['fine'] }, 'model'],
    ];
    for (const [body, param] of cases) {
      const answer = await post(body);
      expect({ body, status: answer.status }).toEqual({ body, status: 400 });
      expect({ body, param: (answer.body.error as { param: string }).param }).toEqual({ body, param });
    }
    expect(await queued()).toBe(before);
  });

  it('refuses a document too long for the context with the context error, naming documents', async () => {
    const answer = await post({ model: RANK_MODEL, query: QUERY, documents: ['short', ' a'.repeat(CONTEXT_SIZE + 10)] });
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ code: 'context_length_exceeded', param: 'documents' });
    expect((answer.body.error as { message: string }).message).toMatch(`maximum context length is ${CONTEXT_SIZE} tokens`);
  });
});
