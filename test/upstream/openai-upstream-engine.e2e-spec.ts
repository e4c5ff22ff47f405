import Ajv from 'ajv';
import OpenAI, { APIError } from 'openai';
import type { ManagedProcess } from '../../tools/local-stack/managed-process';
import type { RunningApi } from '../../tools/local-stack/services';
import { recordFigure } from '../support/figures';
import { assertMatchesSchema } from '../support/openai-schema';
import { STACK_API_KEY, STACK_MODEL, ServiceStack, waitFor } from '../support/service-stack';

/** What a chat completion job's BullMQ record shows of its runs. */
interface JobRecord {
  attemptsStarted: number;
  finishedOn?: number;
  failedReason?: string;
}

/**
 * ENGINE=openai against a real OpenAI-compatible server: a first deployment of this service (API
 * and a llama.cpp worker on the tiny model) is the upstream; a second deployment, on its own
 * Redis, runs workers with ENGINE=openai pointed at it. Clients use the real `openai` package on
 * the second and must get what the first gives, errors included.
 */
describe('the openai upstream engine, with this service as its upstream', () => {
  let upstream: ServiceStack;
  let upstreamSecondApi: RunningApi;
  let front: ServiceStack;
  let frontWorker: ManagedProcess;
  let client: OpenAI;
  let direct: OpenAI;
  const model = STACK_MODEL;
  const ajv = new Ajv({ strict: false });

  /** A worker of the second deployment whose upstream is `api` of the first. */
  const upstreamWorker = (api: RunningApi, concurrency = 2): Promise<ManagedProcess> =>
    front.addWorker({
      ENGINE: 'openai',
      UPSTREAM_BASE_URL: api.baseUrl,
      UPSTREAM_API_KEY: STACK_API_KEY,
      UPSTREAM_MAX_CONCURRENCY: String(concurrency),
      UPSTREAM_TIMEOUT_MS: '10000',
      UPSTREAM_KINDS: 'generate,tokenize',
    });

  beforeAll(async () => {
    // The upstream's context is small, so a prompt the second deployment admits can overflow it.
    upstream = await ServiceStack.start({
      name: 'upstream-first',
      workers: 1,
      parallelSequences: 2,
      workerEnv: { CONTEXT_SIZE: '2048' },
      apiEnv: { BODY_LIMIT_BYTES: String(64 * 1024) },
    });
    upstreamSecondApi = await upstream.addApi();
    front = await ServiceStack.start({ name: 'upstream-second', workers: 0 });
    frontWorker = await upstreamWorker(upstream.api);
    client = new OpenAI({ baseURL: front.baseUrl, apiKey: STACK_API_KEY, maxRetries: 0 });
    direct = new OpenAI({ baseURL: upstream.baseUrl, apiKey: STACK_API_KEY, maxRetries: 0 });
  }, 180_000);
  afterAll(async () => {
    await front?.stop();
    await upstream?.stop();
  });

  const question: OpenAI.ChatCompletionMessageParam[] = [
    { role: 'system', content: 'You are a storyteller.' },
    { role: 'user', content: 'Tell me about the rabbit.' },
  ];

  /** Usage's counts, not how much of the prompt the upstream's sequence happened to hold already. */
  const counts = ({ prompt_tokens, completion_tokens, total_tokens }: OpenAI.CompletionUsage) => ({ prompt_tokens, completion_tokens, total_tokens });

  it('answers a non-stream request as the upstream does: the same text, finish reason and usage', async () => {
    const request = { model, messages: question, max_tokens: 24, temperature: 0, seed: 3 };
    const [through, upstreamAnswer] = await Promise.all([client.chat.completions.create(request), direct.chat.completions.create(request)]);
    assertMatchesSchema('CreateChatCompletionResponse', through);
    expect(through.choices[0].message.content).toBe(upstreamAnswer.choices[0].message.content);
    expect(through.choices[0].finish_reason).toBe('length');
    expect(counts(through.usage!)).toEqual(counts(upstreamAnswer.usage!));
    expect(through.usage?.completion_tokens).toBe(24);
    // That part comes through too: this upstream (a llama.cpp worker) reports it.
    expect(through.usage?.prompt_tokens_details?.cached_tokens).toBeGreaterThanOrEqual(0);
  });

  it('streams the same answer, with a usage chunk when asked', async () => {
    const request = { model, messages: question, max_tokens: 30, temperature: 0, seed: 4 };
    const stream = await client.chat.completions.create({ ...request, stream: true, stream_options: { include_usage: true } });
    let text = '';
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of stream) {
      assertMatchesSchema('CreateChatCompletionStreamResponse', chunk);
      chunks.push(chunk);
      text += chunk.choices[0]?.delta.content ?? '';
    }
    const upstreamAnswer = await direct.chat.completions.create(request);
    expect(text).toBe(upstreamAnswer.choices[0].message.content);
    expect(chunks.length).toBeGreaterThan(3);
    expect(chunks.at(-2)?.choices[0].finish_reason).toBe('length');
    expect(counts(chunks.at(-1)!.usage!)).toEqual(counts(upstreamAnswer.usage!));
  });

  it('passes logprobs and logit_bias through: the same tokens and log probabilities as the upstream gives', async () => {
    const request = { model, messages: question, max_tokens: 6, temperature: 0, seed: 5, logprobs: true, top_logprobs: 2, logit_bias: { '300': 100 } };
    const [through, upstreamAnswer] = await Promise.all([client.chat.completions.create(request), direct.chat.completions.create(request)]);
    assertMatchesSchema('CreateChatCompletionResponse', through);
    expect(through.choices[0].message.content).toBe(upstreamAnswer.choices[0].message.content);
    expect(through.choices[0].logprobs?.content).toEqual(upstreamAnswer.choices[0].logprobs?.content);
    expect(through.choices[0].logprobs?.content).toHaveLength(6);
    // +100 on one token makes it the whole answer, as on the upstream itself.
    const tokens = new Set(through.choices[0].logprobs?.content?.map((entry) => entry.token));
    expect(tokens.size).toBe(1);
    // Streamed, each content chunk carries its own tokens' log probabilities, as the upstream's do.
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of await client.chat.completions.create({ ...request, stream: true })) chunks.push(chunk);
    const withText = chunks.filter((chunk) => (chunk.choices[0]?.delta.content ?? '') !== '');
    expect(withText.length).toBeGreaterThan(1);
    for (const chunk of chunks) {
      const [choice] = chunk.choices;
      expect((choice?.logprobs?.content ?? []).map((entry) => entry.token).join('')).toBe(choice?.delta.content ?? '');
    }
    expect(withText.flatMap((chunk) => chunk.choices[0].logprobs?.content ?? [])).toEqual(upstreamAnswer.choices[0].logprobs?.content);
  });

  it("passes plain prompts on to the upstream's /v1/completions: the same text, echo, log probabilities and usage", async () => {
    const request = { model, prompt: 'The rabbit ran down the hole and', max_tokens: 6, temperature: 0, echo: true, logprobs: 2 };
    const [through, upstreamAnswer] = await Promise.all([client.completions.create(request), direct.completions.create(request)]);
    expect(through.object).toBe('text_completion');
    expect(through.choices[0].text).toBe(upstreamAnswer.choices[0].text);
    expect(through.choices[0].text.startsWith(request.prompt)).toBe(true);
    expect(through.choices[0].logprobs).toEqual(upstreamAnswer.choices[0].logprobs);
    expect(through.choices[0].finish_reason).toBe(upstreamAnswer.choices[0].finish_reason);
    expect(counts(through.usage!)).toEqual(counts(upstreamAnswer.usage!));
    // What the upstream cannot do comes back as it refused it: this one's model has no FIM tokens.
    await expect(client.completions.create({ model, prompt: 'The rabbit', suffix: ' the end.' })).rejects.toMatchObject({ status: 400, param: 'suffix' });
  });

  it("counts tokens with the upstream's /tokenize and /detokenize: text, a conversation, and ids back to text", async () => {
    const post = async (api: string, path: string, body: unknown) => {
      const response = await fetch(`${api.replace(/\/v1$/, '')}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${STACK_API_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    const text = { model, prompt: 'The rabbit ran down the hole.' };
    const [through, upstreamAnswer] = await Promise.all([post(front.baseUrl, '/tokenize', text), post(upstream.baseUrl, '/tokenize', text)]);
    expect(through.status).toBe(200);
    expect(through.body.tokens).toEqual(upstreamAnswer.body.tokens);
    const detokenize = { model, tokens: through.body.tokens };
    const [back, upstreamBack] = await Promise.all([post(front.baseUrl, '/detokenize', detokenize), post(upstream.baseUrl, '/detokenize', detokenize)]);
    expect(back).toEqual(upstreamBack);
    // The start token the tokenizer added comes back as its text.
    expect(back.body.prompt).toMatch(new RegExp(`${text.prompt.replace('.', '\\.')}$`));
    const chat = { model, messages: question };
    const [chatThrough, chatUpstream] = await Promise.all([post(front.baseUrl, '/tokenize', chat), post(upstream.baseUrl, '/tokenize', chat)]);
    expect(chatThrough.body.count).toBe(chatUpstream.body.count);
    // A Responses count through the upstream's tokenizer: the prompt its answer gets.
    const input = { model, instructions: 'Be brief.', input: 'Where did the rabbit go?' };
    const counted = await client.responses.inputTokens.count(input);
    const answered = await direct.responses.create({ ...input, max_output_tokens: 16 });
    expect(counted.input_tokens).toBe(answered.usage?.input_tokens);
  });

  it("relays the upstream's refusal of a token id outside its vocabulary, naming logit_bias", async () => {
    const error = await client.chat.completions.create({ model, messages: question, max_tokens: 4, logit_bias: { '10000000': 5 } }).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('logit_bias');
  });

  describe('tools and structured output, enforced by the upstream', () => {
    const weatherParameters = {
      type: 'object',
      properties: { city: { type: 'string' }, days: { type: 'integer' } },
      required: ['city', 'days'],
      additionalProperties: false,
    };
    const weatherTool: OpenAI.ChatCompletionFunctionTool = {
      type: 'function',
      function: { name: 'get_weather', description: 'Weather for a city', parameters: weatherParameters },
    };
    const weatherQuestion: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'What is the weather in Paris?' }];

    it('answers tool_choice "required" with a call whose arguments satisfy the schema', async () => {
      const completion = await client.chat.completions.create({ model, messages: weatherQuestion, tools: [weatherTool], tool_choice: 'required', seed: 1 });
      assertMatchesSchema('CreateChatCompletionResponse', completion);
      const [choice] = completion.choices;
      expect(choice.finish_reason).toBe('tool_calls');
      const call = choice.message.tool_calls?.[0];
      if (call?.type !== 'function') throw new Error('expected a function call');
      expect(call.function.name).toBe('get_weather');
      expect(ajv.validate(weatherParameters, JSON.parse(call.function.arguments))).toBe(true);
    });

    it('streams a named call (id and name first, then arguments) and takes its result back in the next turn', async () => {
      const stream = await client.chat.completions.create({
        model,
        messages: weatherQuestion,
        tools: [weatherTool],
        tool_choice: { type: 'function', function: { name: 'get_weather' } },
        stream: true,
        seed: 2,
      });
      const fragments: OpenAI.ChatCompletionChunk.Choice.Delta.ToolCall[] = [];
      let finishReason: string | null = null;
      for await (const chunk of stream) {
        fragments.push(...(chunk.choices[0]?.delta.tool_calls ?? []));
        finishReason = chunk.choices[0]?.finish_reason ?? finishReason;
      }
      expect(fragments[0]).toMatchObject({ index: 0, type: 'function', function: { name: 'get_weather' } });
      const id = fragments[0].id!;
      const args = fragments.map((fragment) => fragment.function?.arguments ?? '').join('');
      expect(ajv.validate(weatherParameters, JSON.parse(args))).toBe(true);
      expect(finishReason).toBe('tool_calls');

      // The assistant's call and the tool's answer travel upstream as OpenAI messages: the
      // upstream's prompt grows by them.
      const next = await client.chat.completions.create({
        model,
        max_tokens: 8,
        seed: 2,
        messages: [
          ...weatherQuestion,
          { role: 'assistant', content: null, tool_calls: [{ id, type: 'function', function: { name: 'get_weather', arguments: args } }] },
          { role: 'tool', tool_call_id: id, content: '{"temperature": 21}' },
        ],
      });
      expect(next.choices[0].message.content?.length).toBeGreaterThan(0);
      const alone = await client.chat.completions.create({ model, max_tokens: 1, seed: 2, messages: weatherQuestion });
      expect(next.usage!.prompt_tokens).toBeGreaterThan(alone.usage!.prompt_tokens);
    });

    it('answers response_format json_schema with JSON that satisfies the schema', async () => {
      const schema = {
        type: 'object',
        properties: { title: { type: 'string' }, pages: { type: 'integer' } },
        required: ['title', 'pages'],
        additionalProperties: false,
      };
      const completion = await client.chat.completions.create({
        model,
        messages: [{ role: 'user', content: 'Describe a book.' }],
        response_format: { type: 'json_schema', json_schema: { name: 'book', schema, strict: true } },
        max_tokens: 200,
        seed: 5,
      });
      expect(ajv.validate(schema, JSON.parse(completion.choices[0].message.content ?? ''))).toBe(true);
    });
  });

  it("passes the upstream's refusal on: a prompt over the upstream's context is a 400 context_length_exceeded", async () => {
    const long = 'the rabbit ran down the hole and fell for a long time '.repeat(300);
    const error = await client.chat.completions
      .create({ model, messages: [{ role: 'user', content: long }], max_tokens: 5 })
      .catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(APIError);
    const { status, code, param, type } = error as APIError;
    expect([status, type, param, code]).toEqual([400, 'invalid_request_error', 'messages', 'context_length_exceeded']);
    expect((error as APIError).message).toMatch(/context length/);
  });

  it("passes any other upstream 4xx on with the upstream's status, message and code (a body over its size limit: 413)", async () => {
    const big = 'word '.repeat(20_000);
    const error = await client.chat.completions.create({ model, messages: [{ role: 'user', content: big }], max_tokens: 5 }).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(APIError);
    const { status, code } = error as APIError;
    expect([status, code]).toEqual([413, 'request_too_large']);
    expect((error as APIError).message).toMatch(/too large/);
  });

  it("closes the upstream's request when the client disconnects: the upstream job is cancelled at once", async () => {
    const upstreamQueue = upstream.queue();
    const abort = new AbortController();
    const stream = await client.chat.completions.create(
      { model, messages: [{ role: 'user', content: 'Tell me everything.' }], max_tokens: 1900, temperature: 0, stream: true },
      { signal: abort.signal },
    );
    let received = 0;
    let disconnectedAt = 0;
    const reading = (async () => {
      for await (const chunk of stream) {
        received += chunk.choices[0]?.delta.content?.length ?? 0;
        if (received > 40) {
          disconnectedAt = Date.now();
          abort.abort();
        }
      }
    })().catch(() => undefined);
    const upstreamJob = await waitFor('the upstream job to run', async () => (await upstreamQueue.getJobs(['active']))[0]);
    await reading;
    const ended = await waitFor('the upstream job to end', async () => {
      const job = (await upstreamQueue.getJob(upstreamJob.id!)) as JobRecord | undefined;
      return job?.finishedOn ? job : undefined;
    });
    expect(ended.failedReason).toMatch(/cancelled/);
    const tookMs = ended.finishedOn! - disconnectedAt;
    recordFigure('openai engine: client disconnect -> upstream job cancelled', tookMs);
    // Cancelled rather than finished (above), and promptly; `npm run bench:cancel` measures how promptly.
    expect(tookMs).toBeLessThan(1000);
  });

  it('ends a stream whose upstream fails after the first token with an error event, never a short answer', async () => {
    const stream = await client.chat.completions.create({
      model,
      messages: [{ role: 'user', content: 'Tell me everything.' }],
      max_tokens: 1900,
      temperature: 0,
      stream: true,
    });
    let text = '';
    const failure = await (async () => {
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta.content ?? '';
        if (text.length > 40 && upstream.workers[0].child.exitCode === null && upstream.workers[0].child.signalCode === null) {
          upstream.workers[0].child.kill('SIGKILL');
        }
      }
      return undefined;
    })().catch((thrown: unknown) => thrown);
    expect(failure).toBeInstanceOf(APIError);
    expect((failure as APIError).message).toMatch(/upstream|engine/i);
    expect(text.length).toBeGreaterThan(40);
    await upstream.addWorker();
  });

  it('retries a job whose upstream is down on another worker, unnoticed by the client', async () => {
    const worker = await upstreamWorker(upstreamSecondApi, 1);
    await frontWorker.stop('SIGTERM', 30_000);
    frontWorker = await upstreamWorker(upstream.api, 1);
    await upstreamSecondApi.process.stop('SIGKILL');
    const queue = front.queue();
    const requests = Array.from({ length: 4 }, (_, index) =>
      client.chat.completions.create({ model, messages: [{ role: 'user', content: `Story number ${index}` }], max_tokens: 8, seed: index }),
    );
    const answers = await Promise.all(requests);
    expect(answers.map((answer) => answer.choices[0].finish_reason)).toEqual(['length', 'length', 'length', 'length']);
    const jobs = (await Promise.all(answers.map((answer) => queue.getJob(answer.id)))) as JobRecord[];
    // The worker whose upstream is gone took at least one of them first; another worker answered it.
    expect(Math.max(...jobs.map((job) => job.attemptsStarted))).toBeGreaterThanOrEqual(2);
    await worker.stop('SIGKILL');
  });

  it('answers 503 upstream_unavailable with Retry-After when no upstream answers, within seconds', async () => {
    await upstream.api.process.stop('SIGKILL');
    const startedAt = Date.now();
    const response = await fetch(`${front.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${STACK_API_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'Hello' }], max_tokens: 5 }),
    });
    const tookMs = Date.now() - startedAt;
    recordFigure('openai engine: upstream down -> 503 after its retries', tookMs);
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('5');
    const body = (await response.json()) as { error: { code: string } };
    assertMatchesSchema('ErrorResponse', body);
    expect(body.error.code).toBe('upstream_unavailable');
    expect(tookMs).toBeLessThan(10_000);
  });
});
