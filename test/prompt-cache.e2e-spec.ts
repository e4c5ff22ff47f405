import OpenAI from 'openai';
import { resolve } from 'node:path';
import { REPO_ROOT, workerHealthUrl } from '../tools/local-stack/services';
import { scrape, total } from './operators/prometheus-text';
import { STACK_API_KEY, STACK_MODEL, ServiceStack } from './support/service-stack';

const UNCACHED_MODEL = 'tiny-chat-uncached';

/**
 * The llama.cpp worker's prompt cache, through the official client: a sequence keeps the system
 * prompt of its last job, and a job that shares it goes to that sequence and evaluates only the
 * rest (OpenAI's usage.prompt_tokens_details.cached_tokens). One worker per model, two sequences
 * each, and nothing else running, so which sequence holds what is known.
 */
describe('Prompt cache (llama.cpp)', () => {
  let stack: ServiceStack;
  let client: OpenAI;
  let workerMetrics: string;

  beforeAll(async () => {
    stack = await ServiceStack.start({ name: 'prompt-cache', workers: 0, parallelSequences: 2, models: [STACK_MODEL, UNCACHED_MODEL] });
    workerMetrics = `${await workerHealthUrl(await stack.addWorker())}/metrics`;
    // The same model file, served under another name by a worker without the cache.
    await stack.addWorker({ PROMPT_CACHE: 'false', MODEL_PATH: resolve(REPO_ROOT, `models/${STACK_MODEL}.gguf`) }, UNCACHED_MODEL);
    client = new OpenAI({ baseURL: stack.baseUrl, apiKey: STACK_API_KEY, maxRetries: 0 });
  }, 90_000);

  afterAll(async () => {
    await stack?.stop();
  });

  const systemAbout = (topic: string): string => `You are a storyteller. ${`Every tale you tell is about ${topic}. `.repeat(15)}`;
  const ask = (system: string, question: string, model = STACK_MODEL) =>
    client.chat.completions.create({
      model,
      messages: [
        { role: 'system', content: system },
        { role: 'user', content: question },
      ],
      max_tokens: 12,
      temperature: 0,
    });
  const cached = (completion: OpenAI.ChatCompletion): number => completion.usage?.prompt_tokens_details?.cached_tokens ?? -1;
  /** Whether nearly all the prompt (all but the question and the template's turn markers) was cached. */
  const warm = (completion: OpenAI.ChatCompletion): boolean =>
    cached(completion) > completion.usage!.prompt_tokens * 0.8 && cached(completion) < completion.usage!.prompt_tokens;

  it('evaluates a shared system prompt once: later requests report it as cached_tokens, and answer as the first did', async () => {
    const system = systemAbout('a rabbit, a queen and a garden');
    const first = await ask(system, 'Tell me about the queen.');
    const second = await ask(system, 'Tell me about the garden.');
    const again = await ask(system, 'Tell me about the queen.');
    expect(cached(first)).toBeGreaterThanOrEqual(0);
    expect(warm(first)).toBe(false);
    expect([warm(second), warm(again)]).toEqual([true, true]);
    expect(again.choices[0].message.content).toBe(first.choices[0].message.content);
  });

  it('sends a request to the sequence that holds its system prompt', async () => {
    const [hatter, cat] = [systemAbout('a hatter and a hare'), systemAbout('a cat that grins')];
    await ask(hatter, 'Who pours the tea?');
    // The other sequence takes the second system prompt; the first still holds the hatter's.
    expect(warm(await ask(cat, 'Where is the cat?'))).toBe(false);
    expect(warm(await ask(hatter, 'Why is a raven like a writing desk?'))).toBe(true);
    expect(warm(await ask(cat, 'Why does it grin?'))).toBe(true);
  });

  it('caches the tool definitions of requests without a system prompt', async () => {
    const tools: OpenAI.ChatCompletionTool[] = [
      {
        type: 'function',
        function: {
          name: 'find_rabbit',
          description: 'Where the white rabbit is now, by the time of day.',
          parameters: { type: 'object', properties: { hour: { type: 'integer' } }, required: ['hour'] },
        },
      },
    ];
    const call = (content: string) =>
      client.chat.completions.create({
        model: STACK_MODEL,
        messages: [{ role: 'user', content }],
        tools,
        tool_choice: 'required',
        max_tokens: 24,
        temperature: 0,
      });
    await call('Where is the rabbit at noon?');
    expect(warm(await call('Where is the rabbit at dusk?'))).toBe(true);
  });

  it('evaluates the prompt of n choices once: the choices after the first find all of it cached', async () => {
    const cachedSoFar = async () => total((await scrape(workerMetrics)).samples, 'llm_worker_cached_prompt_tokens_total', { model: STACK_MODEL });
    const before = await cachedSoFar();
    const question = `Tell me, slowly and in order, ${'what the queen said to the rabbit and '.repeat(8)}why.`;
    const completion = await client.chat.completions.create({
      model: STACK_MODEL,
      messages: [
        { role: 'system', content: systemAbout('a queen of hearts') },
        { role: 'user', content: question },
      ],
      n: 3,
      max_tokens: 8,
    });
    expect(completion.choices).toHaveLength(3);
    // usage counts the prompt once, as the first choice found it; the worker counts every choice's.
    const promptTokens = completion.usage!.prompt_tokens;
    expect((await cachedSoFar()) - before).toBe(cached(completion) + 2 * (promptTokens - 1));
  });

  /** Turn 2 of a conversation: turn 1 with its answer, then one more question. */
  const nextTurn = (system: string, question: string, answer: string | null) =>
    client.chat.completions.create({
      model: STACK_MODEL,
      messages: [
        { role: 'system', content: system },
        { role: 'user', content: question },
        { role: 'assistant', content: answer },
        { role: 'user', content: 'And then?' },
      ],
      max_tokens: 12,
      temperature: 0,
    });

  it('keeps a conversation and its answer: the next turn finds all of turn 1 cached, answer included', async () => {
    const system = systemAbout('a pigeon and a serpent');
    const question = `Tell me ${'about the pigeon, the serpent and '.repeat(10)}the eggs.`;
    const first = await client.chat.completions.create({
      model: STACK_MODEL,
      messages: [
        { role: 'system', content: system },
        { role: 'user', content: question },
      ],
      max_tokens: 12,
      temperature: 0,
    });
    const next = await nextTurn(system, question, first.choices[0].message.content);
    // All of turn 1 but the answer's last token and what follows it (the template's end of turn
    // may render the answer's end differently from how it was generated).
    const turnOne = first.usage!.prompt_tokens + first.usage!.completion_tokens;
    expect(cached(next)).toBeGreaterThanOrEqual(turnOne - 3);
    expect(cached(next)).toBeLessThan(next.usage!.prompt_tokens);
  });

  it('keeps a conversation up to its prompt_cache_breakpoint in explicit mode: the next turn finds its prompt cached, not the answer', async () => {
    const system = systemAbout('a dormouse in a teapot');
    const question = `Tell me ${'about the dormouse, the teapot and '.repeat(10)}the tea.`;
    const first = await client.chat.completions.create({
      model: STACK_MODEL,
      messages: [
        { role: 'system', content: system },
        { role: 'user', content: [{ type: 'text', text: question, prompt_cache_breakpoint: { mode: 'explicit' } }] },
      ],
      prompt_cache_options: { mode: 'explicit' },
      max_tokens: 12,
      temperature: 0,
    });
    const next = await nextTurn(system, question, first.choices[0].message.content);
    // All but the prompt's last tokens (their reading may change with the text after them).
    expect(cached(next)).toBeGreaterThanOrEqual(first.usage!.prompt_tokens - 3);
    expect(cached(next)).toBeLessThanOrEqual(first.usage!.prompt_tokens);
  });

  it('keeps the prompt up to a breakpoint inside a message: a request sharing that much finds it cached', async () => {
    const documentText = `Read this first. ${'The queen shouted off with their heads at every guest in the garden. '.repeat(12)}`;
    const about = (question: string, breakpoint: boolean) =>
      client.chat.completions.create({
        model: STACK_MODEL,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: documentText, ...(breakpoint ? { prompt_cache_breakpoint: { mode: 'explicit' as const } } : {}) },
              { type: 'text', text: question },
            ],
          },
        ],
        max_tokens: 8,
        temperature: 0,
      });
    await about('Who shouted?', true);
    const next = await about('At whom did she shout?', false);
    // Most of the document (where two texts' tokens part near its end depends on the tokenizer);
    // without the breakpoint only the template's first tokens would be.
    const documentOnly = (await client.chat.completions.create({ model: STACK_MODEL, messages: [{ role: 'user', content: documentText }], max_tokens: 1 }))
      .usage!.prompt_tokens;
    expect(cached(next)).toBeGreaterThan(documentOnly * 0.9);
    expect(cached(next)).toBeLessThan(next.usage!.prompt_tokens - 3);
  });

  it("keeps nothing with prompt_cache_options.mode 'explicit' and no breakpoint", async () => {
    const system = systemAbout('a mock turtle that sings');
    await client.chat.completions.create({
      model: STACK_MODEL,
      messages: [
        { role: 'system', content: system },
        { role: 'user', content: 'What does it sing?' },
      ],
      prompt_cache_options: { mode: 'explicit' },
      max_tokens: 12,
      temperature: 0,
    });
    expect(warm(await ask(system, 'Why is it sad?'))).toBe(false);
    // The default keeps the system prompt again.
    expect(warm(await ask(system, 'What is the lobster quadrille?'))).toBe(true);
  });

  it('caches nothing with PROMPT_CACHE=false', async () => {
    const system = systemAbout('a caterpillar on a mushroom');
    const answers = [await ask(system, 'What does it smoke?', UNCACHED_MODEL), await ask(system, 'Who are you?', UNCACHED_MODEL)];
    expect(answers.map(cached)).toEqual([0, 0]);
  });
});
