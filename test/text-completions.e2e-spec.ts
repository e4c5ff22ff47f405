import { isFinished } from '@app/api';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import OpenAI, { toFile } from 'openai';
import { REPO_ROOT } from '../tools/local-stack/services';
import { engineInfill } from './support/llama-reference';
import { assertMatchesEmbeddingsSchema } from './support/openai-embeddings-schema';
import { ServiceStack, STACK_API_KEY, waitFor } from './support/service-stack';

const MODEL = 'tiny-chat';
const EMBED_MODEL = 'tiny-embed';
/** tiny-chat's weights with fill-in-the-middle tokens. */
const FIM_MODEL = 'tiny-fim';
const PROMPT = 'The rabbit ran down the hole and';

interface LegacyLogprobs {
  tokens: string[];
  token_logprobs: Array<number | null>;
  top_logprobs: Array<Record<string, number> | null>;
  text_offset: number[];
}

/** The log probability of each of the prompt's tokens after the first, as node-llama-cpp's own evaluation gives them. */
async function engineScores(tokens: number[]): Promise<number[]> {
  const { getLlama } = await import('node-llama-cpp');
  const llama = await getLlama({ gpu: false, build: 'never' });
  try {
    const model = await llama.loadModel({ modelPath: resolve(REPO_ROOT, `models/${MODEL}.gguf`) });
    const context = await model.createContext({ contextSize: 512 });
    const sequence = context.getSequence();
    type Item = Parameters<typeof sequence.controlledEvaluate>[0][number];
    const items = tokens.map((token, index): Item =>
      index < tokens.length - 1 ? [token as never, { generateNext: { probabilities: true } }] : (token as never),
    );
    const outputs = await sequence.controlledEvaluate(items);
    return tokens.slice(1).map((token, index) => Math.log(outputs[index]?.next?.probabilities?.get(token as never) ?? 0));
  } finally {
    await llama.dispose();
  }
}

/**
 * `POST /v1/completions`, OpenAI's legacy contract, on the real llama worker: plain prompts with no
 * chat template (text, token ids, several at once, `n` each), streamed as `text_completion`
 * chunks, `echo` + `logprobs` scored as node-llama-cpp scores the prompt on its own, max_tokens 0
 * as evaluation harnesses send it, `suffix` filled in the middle on a model with FIM tokens, batch
 * lines; each bad request a 400 naming its field.
 */
describe('Legacy completions', () => {
  let stack: ServiceStack;
  let client: OpenAI;
  const filesDir = mkdtempSync(join(tmpdir(), 'completion-batches-'));

  beforeAll(async () => {
    stack = await ServiceStack.start({
      name: 'text-completions',
      workers: 0,
      models: [MODEL, EMBED_MODEL, FIM_MODEL],
      parallelSequences: 2,
      apiEnv: { FILES_DIR: filesDir },
    });
    await Promise.all([MODEL, EMBED_MODEL, FIM_MODEL].map((model) => stack.addWorker({}, model)));
    client = new OpenAI({ baseURL: stack.baseUrl, apiKey: STACK_API_KEY, maxRetries: 0 });
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
    rmSync(filesDir, { recursive: true, force: true });
  });

  const post = async (path: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> => {
    const response = await fetch(`${new URL(stack.baseUrl).origin}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${STACK_API_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
  const promptTokens = async (prompt: string): Promise<number[]> => {
    const answer = await post('/tokenize', { model: MODEL, prompt });
    return answer.body.tokens as number[];
  };

  it('completes a plain prompt with no chat template: 16 tokens by default, counted as the tokenizer counts the text', async () => {
    const completion = await client.completions.create({ model: MODEL, prompt: PROMPT, seed: 3 });
    assertMatchesEmbeddingsSchema('CreateCompletionResponse', completion);
    expect(completion.object).toBe('text_completion');
    expect(completion.id).toMatch(/^cmpl-/);
    expect(completion.choices).toHaveLength(1);
    expect(completion.choices[0].text.length).toBeGreaterThan(0);
    expect(completion.choices[0].logprobs).toBeNull();
    expect(completion.usage?.completion_tokens).toBeLessThanOrEqual(16);
    if (completion.usage?.completion_tokens === 16) expect(completion.choices[0].finish_reason).toBe('length');
    // The prompt is the text's own tokens: no template around it (a chat request of it counts more).
    expect(completion.usage?.prompt_tokens).toBe((await promptTokens(PROMPT)).length);
    const chat = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: PROMPT }], max_tokens: 1 });
    expect(chat.usage?.prompt_tokens).toBeGreaterThan(completion.usage!.prompt_tokens + 2);
  });

  it('streams the same text as the whole answer, then the usage when asked', async () => {
    const request = { model: MODEL, prompt: PROMPT, max_tokens: 30, temperature: 0 };
    const whole = await client.completions.create(request);
    const stream = await client.completions.create({ ...request, stream: true, stream_options: { include_usage: true } });
    let text = '';
    let finish: string | null = null;
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      expect(chunk.object).toBe('text_completion');
      for (const choice of chunk.choices) {
        text += choice.text;
        finish = choice.finish_reason ?? finish;
      }
      usage = chunk.usage ?? usage;
    }
    expect(text).toBe(whole.choices[0].text);
    expect(finish).toBe(whole.choices[0].finish_reason);
    expect(usage).toEqual(whole.usage);
  });

  it("echoes the prompt with its tokens' log probabilities, as node-llama-cpp scores them, and max_tokens 0 scores the prompt alone", async () => {
    // tiny-chat puts a start token first: it predicts the prompt's first token, so every token of the text is scored.
    const evaluated = await promptTokens(PROMPT);
    const spelled = (await post('/tokenize', { model: MODEL, prompt: PROMPT, add_special_tokens: false })).body.tokens as number[];
    expect(evaluated).toEqual([expect.any(Number), ...spelled]);
    const answer = await client.completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 4, temperature: 0, echo: true, logprobs: 2 });
    assertMatchesEmbeddingsSchema('CreateCompletionResponse', answer);
    const [choice] = answer.choices;
    const logprobs = choice.logprobs as unknown as LegacyLogprobs;
    expect(choice.text.startsWith(PROMPT)).toBe(true);
    expect(logprobs.tokens.join('')).toBe(choice.text);
    expect(logprobs.tokens.length).toBe(spelled.length + answer.usage!.completion_tokens);
    // Every token has its number, and at most logprobs + 1 alternatives, itself among them.
    for (let index = 0; index < logprobs.tokens.length; index++) {
      expect(logprobs.token_logprobs[index]).toBeLessThanOrEqual(0);
      const top = logprobs.top_logprobs[index]!;
      expect(Object.keys(top).length).toBeLessThanOrEqual(3);
      expect(top[logprobs.tokens[index]]).toBe(logprobs.token_logprobs[index]);
    }
    expect(logprobs.text_offset[0]).toBe(0);
    expect(logprobs.text_offset.at(-1)).toBe(choice.text.length - logprobs.tokens.at(-1)!.length);

    const own = await engineScores(evaluated);
    const scored = logprobs.token_logprobs.slice(0, spelled.length) as number[];
    expect(own).toHaveLength(spelled.length);
    own.forEach((logprob, index) => expect(Math.abs(scored[index] - logprob)).toBeLessThan(1e-3));
    const sum = (values: number[]): number => values.reduce((total, value) => total + value, 0);
    expect(Math.abs(sum(scored) - sum(own))).toBeLessThan(1e-2);

    // lm-evaluation-harness's loglikelihood: the prompt scored, nothing generated.
    const scoring = await client.completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 0, echo: true, logprobs: 0 });
    expect(scoring.choices[0].text).toBe(PROMPT);
    expect(scoring.choices[0].finish_reason).toBe('length');
    expect(scoring.usage?.completion_tokens).toBe(0);
    expect((scoring.choices[0].logprobs as unknown as LegacyLogprobs).token_logprobs).toEqual(scored);
  });

  it('answers several prompts n times each, choice p * n + c, and token ids as their text', async () => {
    const prompts = ['The queen said', 'Alice saw'];
    const answer = await client.completions.create({ model: MODEL, prompt: prompts, n: 2, max_tokens: 8, seed: 11 });
    expect(answer.choices.map(({ index }) => index)).toEqual([0, 1, 2, 3]);
    const alone = await client.completions.create({ model: MODEL, prompt: prompts[1], max_tokens: 8, seed: 11 });
    expect(answer.choices[2].text).toBe(alone.choices[0].text);
    const counts = await Promise.all(prompts.map(async (prompt) => (await promptTokens(prompt)).length));
    expect(answer.usage?.prompt_tokens).toBe(counts[0] + counts[1]);

    const byIds = await client.completions.create({ model: MODEL, prompt: await promptTokens(prompts[1]), max_tokens: 8, seed: 11 });
    expect(byIds.choices[0].text).toBe(alone.choices[0].text);
  });

  it("fills in the middle on a model with FIM tokens, as node-llama-cpp's own infill does", async () => {
    const [prefix, suffix] = ['The rabbit', ' and that was the end.'];
    const answer = await client.completions.create({ model: FIM_MODEL, prompt: prefix, suffix, max_tokens: 12, temperature: 0 });
    assertMatchesEmbeddingsSchema('CreateCompletionResponse', answer);
    expect(answer.choices[0].text).toBe(await engineInfill(FIM_MODEL, prefix, suffix, 12));
    expect(answer.choices[0].text.length).toBeGreaterThan(0);
    const spelled = async (text: string): Promise<number> =>
      ((await post('/tokenize', { model: FIM_MODEL, prompt: text, add_special_tokens: false })).body.tokens as number[]).length;
    // The start token, the prefix, suffix and middle tokens around the two texts.
    expect(answer.usage?.prompt_tokens).toBe(4 + (await spelled(prefix)) + (await spelled(suffix)));
  });

  it('refuses what it cannot honour with a 400 naming the field, and queues nothing for it', async () => {
    const queued = async (): Promise<number> => {
      const counts = await Promise.all([MODEL, EMBED_MODEL, FIM_MODEL].map((model) => stack.queue(model).getJobCounts()));
      return counts.flatMap((count) => Object.values(count)).reduce((sum, count) => sum + count, 0);
    };
    await waitFor('the API to know what the embedding worker runs', async () => {
      const answer = await post('/v1/completions', { model: EMBED_MODEL, prompt: 'Hi' });
      return answer.status === 400 && (answer.body.error as { code: string }).code === 'model_not_supported';
    });
    const before = await queued();
    const cases: Array<[unknown, string]> = [
      [{ model: MODEL, prompt: PROMPT, suffix: ' the end.' }, 'suffix'],
      [{ model: FIM_MODEL, prompt: PROMPT, suffix: ' the end.', echo: true }, 'suffix'],
      [{ model: MODEL, prompt: PROMPT, best_of: 3 }, 'best_of'],
      [{ model: MODEL, prompt: PROMPT, logprobs: 6 }, 'logprobs'],
      [{ model: MODEL, prompt: '' }, 'prompt'],
      [{ model: MODEL, prompt: [] }, 'prompt'],
      [{ model: MODEL, prompt: ['fine', ''] }, 'prompt[1]'],
      [
        {
          model: MODEL,
          prompt: [
            [5, 6],
            [7, 999_999],
          ],
        },
        'prompt[1]',
      ],
      [{ model: MODEL, prompt: PROMPT, messages: [] }, 'messages'],
      [{ model: EMBED_MODEL, prompt: PROMPT }, 'model'],
    ];
    for (const [body, param] of cases) {
      const answer = await post('/v1/completions', body);
      expect({ body, status: answer.status }).toEqual({ body, status: 400 });
      assertMatchesEmbeddingsSchema('ErrorResponse', answer.body);
      expect({ body, param: (answer.body.error as { param: string }).param }).toEqual({ body, param });
    }
    expect(await queued()).toBe(before);

    // Only the worker counts the prompt's tokens: a prompt and answer over its context fail there.
    const tooLong = await post('/v1/completions', { model: MODEL, prompt: PROMPT, max_tokens: 100_000 });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.error).toMatchObject({ code: 'context_length_exceeded', param: 'prompt' });
  });

  it('runs /v1/completions lines in a batch, each answered as the request would be', async () => {
    const bodies = [
      { model: MODEL, prompt: PROMPT, max_tokens: 6, temperature: 0 },
      { model: MODEL, prompt: PROMPT, suffix: 'x' },
    ];
    const text = bodies.map((body, index) => JSON.stringify({ custom_id: `line-${index}`, method: 'POST', url: '/v1/completions', body })).join('\n');
    const file = await client.files.create({ file: await toFile(Buffer.from(text), 'completions.jsonl'), purpose: 'batch' });
    const created = await client.batches.create({ input_file_id: file.id, endpoint: '/v1/completions', completion_window: '24h' });
    const batch = await waitFor('the batch to end', async () => {
      const current = await client.batches.retrieve(created.id);
      return isFinished(current.status) ? current : undefined;
    });
    expect(batch.request_counts).toEqual({ total: 2, completed: 1, failed: 1 });
    const [line] = (await (await client.files.content(batch.output_file_id!)).text())
      .trimEnd()
      .split('\n')
      .map((json) => JSON.parse(json) as { custom_id: string; response: { status_code: number; body: Record<string, unknown> } });
    assertMatchesEmbeddingsSchema('CreateCompletionResponse', line.response.body);
    const direct = await client.completions.create(bodies[0]);
    expect((line.response.body.choices as Array<{ text: string }>)[0].text).toBe(direct.choices[0].text);
    const [failed] = (await (await client.files.content(batch.error_file_id!)).text()).trimEnd().split('\n');
    expect(JSON.parse(failed)).toMatchObject({ custom_id: 'line-1', response: { status_code: 400, body: { error: { param: 'suffix' } } } });
  });
});
