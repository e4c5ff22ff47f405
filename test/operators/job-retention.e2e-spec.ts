import { completionEventsChannel, CompletionJobName, completionQueueName, completionQueuePrefix } from '@app/contracts';
import type { ChatMessage, CompletionJobData, CompletionResult, GenerationOptions } from '@app/contracts';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import OpenAI from 'openai';
import { ENDED_BEFORE, withoutContent } from '@app/worker';
import type { RetainedJobData } from '@app/worker';
import { basicAuth, boardJob, endedAs } from '../support/bull-board-api';
import { waitFor } from '../support/service-stack';
import { e2eStack } from '../support/stack-env';
import { serverRoot } from './prometheus-text';

/**
 * Privacy by default: the shared stack's workers run with RETAIN_CONTENT unset (false), so a
 * job that has ended keeps sizes, timings, finish reason, usage and error, and neither the
 * prompt, the tools' descriptions and schemas, the response format's schema, the stop strings
 * nor the answer: not in Bull Board, not in Redis.
 */
describe('finished jobs without contents (RETAIN_CONTENT=false)', () => {
  const stack = e2eStack();
  const board = `${serverRoot(stack.apiUrls[0])}/admin/queues`;
  const admin = basicAuth(stack.admin.user, stack.admin.password);
  const queueName = completionQueueName(stack.model);
  const queue = new Queue<RetainedJobData, CompletionResult>(queueName, { connection: { url: stack.redisUrl }, prefix: completionQueuePrefix(stack.model) });
  afterAll(() => queue.close());
  const sampling = { temperature: 1, topP: 1, maxTokens: 16, stop: [], frequencyPenalty: 0, presencePenalty: 0, seed: 11 };

  /** A job as the API enqueues it, its events on a channel of its own, to start within 30 s of `acceptedAt`. */
  const jobData = (completionId: string, messages: ChatMessage[], acceptedAt: number): CompletionJobData => ({
    v: 3,
    kind: 'generate',
    id: completionId,
    model: stack.model,
    replyTo: { channel: completionEventsChannel(completionId), stopWhenUnheard: false },
    options: { messages, sampling, responseFormat: { type: 'text' } },
    schedule: { acceptedAt, startDeadline: acceptedAt + 30_000 },
  });

  /** The job once its end is recorded in the queue. */
  const ended = (completionId: string) =>
    waitFor('the job to end', async () => {
      const found = await queue.getJob(completionId);
      return found?.finishedOn ? found : undefined;
    });

  it('an answered job keeps the sizes of its messages and answer, its usage and finish reason, and no text', async () => {
    const prompt = 'Where did the purple walrus hide the brass key?';
    const client = new OpenAI({ baseURL: stack.apiUrls[0], apiKey: stack.apiKey, maxRetries: 0 });
    const completion = await client.chat.completions.create({
      model: stack.model,
      messages: [
        { role: 'system', content: 'Answer like the Cheshire Cat.' },
        { role: 'user', content: prompt },
      ],
      max_tokens: 16,
      temperature: 0,
    });
    const answer = completion.choices[0].message.content ?? '';
    expect(answer.length).toBeGreaterThan(10);

    const shown = await waitFor('the job to be finished in Bull Board', async () => {
      return endedAs(await boardJob(board, admin, queueName, completion.id), 'completed');
    });
    expect(shown.job.data).toMatchObject({
      id: completion.id,
      model: stack.model,
      options: { messages: [] },
      contentRemoved: {
        messages: [
          { role: 'system', characters: 29 },
          { role: 'user', characters: prompt.length },
        ],
        characters: 29 + prompt.length,
      },
    });
    expect(shown.job.data.schedule.acceptedAt).toBeGreaterThan(0);
    expect(shown.job.returnValue).toEqual({
      text: '',
      finishReason: completion.choices[0].finish_reason,
      usage: completion.usage,
      contentRemoved: { characters: answer.length },
    });
    expect(shown.job.processedBy).toMatch(new RegExp(stack.workerIds.join('|')));
    // Nowhere in what the board serves, nor in the job as Redis holds it.
    const stored = await queue.getJob(completion.id);
    for (const text of [JSON.stringify(shown), JSON.stringify(stored?.toJSON())]) {
      expect(text).not.toContain('walrus');
      expect(text).not.toContain('Cheshire');
      expect(text).not.toContain(answer);
    }
  });

  it("an answered job keeps its tools' names and the response format's name, and not their descriptions, schemas or the stop strings", async () => {
    const client = new OpenAI({ baseURL: stack.apiUrls[0], apiKey: stack.apiKey, maxRetries: 0 });
    const burrowParameters = {
      type: 'object',
      properties: { burrow: { type: 'string', description: 'Which hole beneath the hedge' } },
      required: ['burrow'],
      additionalProperties: false,
    };
    const verseSchema = { type: 'object', properties: { gryphonVerse: { type: 'string' } }, required: ['gryphonVerse'], additionalProperties: false };
    const stop = ['tulgey-wood-stop', 'bandersnatch-stop'];
    const completion = await client.chat.completions.create({
      model: stack.model,
      messages: [{ role: 'user', content: 'Sing of the dormouse.' }],
      tools: [{ type: 'function', function: { name: 'follow_rabbit', description: 'Follows the waistcoat-pocket watch', parameters: burrowParameters } }],
      tool_choice: 'none',
      response_format: { type: 'json_schema', json_schema: { name: 'mock_turtle_song', schema: verseSchema, strict: true } },
      stop,
      max_tokens: 16,
      temperature: 0,
    });

    const shown = await waitFor('the job to be finished in Bull Board', async () => {
      return endedAs(await boardJob(board, admin, queueName, completion.id), 'completed');
    });
    const { data } = shown.job;
    const options = data.options as GenerationOptions;
    expect(options.tools).toEqual({ definitions: [{ name: 'follow_rabbit', parameters: {} }], choice: { type: 'none' }, parallel: true });
    expect(options.responseFormat).toEqual({ type: 'json_schema', name: 'mock_turtle_song', schema: {} });
    expect(options.sampling.stop).toEqual([]);
    expect(data.contentRemoved).toMatchObject({
      tools: [
        { name: 'follow_rabbit', descriptionCharacters: 'Follows the waistcoat-pocket watch'.length, parametersCharacters: expect.any(Number) as number },
      ],
      responseFormat: { schemaCharacters: expect.any(Number) as number },
      stop: stop.map((text) => text.length),
    });
    const stored = await queue.getJob(completion.id);
    for (const text of [JSON.stringify(shown), JSON.stringify(stored?.toJSON())]) {
      expect(text).not.toMatch(/dormouse|waistcoat|hedge|burrow|gryphonVerse|tulgey|bandersnatch/);
    }
  });

  it('a failed job keeps its error and the sizes of its messages, and no text', async () => {
    // A job that waited past its deadline: its client was answered 503 long ago, and the worker
    // that takes it now fails it unrun. Enqueued as the API enqueues, so nobody removes it after.
    const completionId = `chatcmpl-retention-${Date.now()}`;
    const messages: ChatMessage[] = [
      { role: 'system', content: 'Speak only of the mock turtle and his sorrow.' },
      { role: 'user', content: 'Recite every verse the lobster quadrille ever had.' },
    ];
    await queue.add(CompletionJobName.ChatCompletion, jobData(completionId, messages, Date.now() - 60_000), { jobId: completionId });

    const job = await ended(completionId);
    expect(job.failedReason).toMatch(/waited too long/);
    const options = job.data.options as GenerationOptions;
    expect(options.messages).toEqual([]);
    expect(job.data.contentRemoved).toEqual({
      messages: messages.map(({ role, content }) => ({ role, characters: content.length })),
      characters: messages[0].content.length + messages[1].content.length,
      stop: [],
    });
    expect(options.sampling).toEqual(sampling);
    expect(job.returnvalue).toBeFalsy();
    const shown = await boardJob(board, admin, queueName, completionId);
    expect(shown?.status).toBe('failed');
    expect(shown?.job.failedReason).toBe(job.failedReason);
    for (const text of [JSON.stringify(shown), JSON.stringify(job.toJSON())]) {
      expect(text).not.toMatch(/turtle|quadrille/);
    }
  });

  it("rewrites a job before the queue records its end, though the worker does not wait for the rewrite's answer", async () => {
    // Every command Redis runs, in the order it runs them: the rewrite must come before BullMQ's
    // move to completed, or a worker dying between the two would leave a finished job with its text.
    const redis = new Redis(stack.redisUrl);
    const monitor = await redis.monitor(); // a connection of its own
    const commands: string[][] = [];
    monitor.on('monitor', (_time: string, args: string[]) => commands.push(args));
    try {
      const client = new OpenAI({ baseURL: stack.apiUrls[0], apiKey: stack.apiKey, maxRetries: 0 });
      const { id } = await client.chat.completions.create({ model: stack.model, messages: [{ role: 'user', content: 'Who stole the tarts?' }], max_tokens: 4 });
      await ended(id);
      const ofJob = (args: string[]) => args.some((arg) => arg.includes(id));
      const endIndex = () => commands.findIndex((args) => ofJob(args) && args.includes('returnvalue') && args.includes('completed'));
      // MONITOR's stream can lag behind the job's end on a busy machine: wait until it shows the end.
      const recordedEnd = await waitFor('MONITOR to show the move to completed', () => {
        const index = endIndex();
        return Promise.resolve(index >= 0 ? index : undefined);
      });
      const rewrite = commands.findIndex((args) => ofJob(args) && args.some((arg) => arg.includes('"contentRemoved":{"messages":')));
      expect(rewrite).toBeGreaterThanOrEqual(0);
      expect(recordedEnd).toBeGreaterThan(rewrite);
    } finally {
      monitor.disconnect();
      redis.disconnect();
    }
  });

  it('a job that comes back without its contents (its worker died after it ended) fails unrun', async () => {
    // As BullMQ hands a stalled job to another worker: its data already rewritten, its end unrecorded.
    const completionId = `chatcmpl-rerun-${Date.now()}`;
    const answered = jobData(completionId, [{ role: 'user', content: 'Which way to the March Hare?' }], Date.now());
    const listener = new Redis(stack.redisUrl);
    const heard: string[] = [];
    listener.on('smessage', (_channel: string, message: string) => heard.push(message));
    await listener.ssubscribe(completionEventsChannel(completionId));
    try {
      await queue.add(CompletionJobName.ChatCompletion, withoutContent(answered), { jobId: completionId });
      const job = await ended(completionId);
      expect(job.failedReason).toBe(ENDED_BEFORE);
      expect(job.attemptsMade).toBe(1);
      // Unrun: not even a `started` event went to its channel.
      expect(heard).toEqual([]);
    } finally {
      listener.disconnect();
    }
  });
});
