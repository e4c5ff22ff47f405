import { decodeCompletionJob, toReplyAddress, UnreadableJobError } from './completion-job-decoder';
import type { CompletionJobData } from './completion-job';

const replyTo = { channel: 'completion-replies:api-1', stopWhenUnheard: true, log: { key: 'log', keepMs: 60_000, maxEvents: 1000 }, leaseKey: 'lease' };

const job: CompletionJobData = {
  v: 3,
  kind: 'generate',
  id: 'chatcmpl-1',
  model: 'tiny-chat',
  options: {
    messages: [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: '', toolCalls: [{ id: 'call_1', name: 'look', arguments: '{}' }] },
      { role: 'tool', content: 'found', toolCallId: 'call_1' },
    ],
    sampling: {
      temperature: 0.7,
      topP: 1,
      maxTokens: 16,
      stop: ['\n'],
      frequencyPenalty: 0,
      presencePenalty: 0,
      seed: 42,
      logitBias: [{ token: 7, bias: -100 }],
    },
    tools: { definitions: [{ name: 'look', parameters: { type: 'object', properties: {} } }], choice: { type: 'function', name: 'look' }, parallel: false },
    choices: 2,
    responseFormat: { type: 'json_schema', name: 'answer', schema: { type: 'object' } },
    logprobs: { top: 3 },
    thinking: false,
    promptCache: { implicit: false, breakpoint: { message: 1, offset: 2 } },
  },
  replyTo,
  schedule: { acceptedAt: 1_700_000_000_000, startDeadline: 1_700_000_030_000, tier: 'flex', affinityKey: 'prefix-1' },
  store: { key: 'answer', ttlMs: 1000 },
};

const embedJob: CompletionJobData = {
  v: 3,
  kind: 'embed',
  id: 'embd-1',
  model: 'tiny-embed',
  options: { inputs: ['the dormouse', [5, 6, 7]] },
  replyTo,
  schedule: { acceptedAt: 1_700_000_000_000, startDeadline: 1_700_000_030_000 },
};

/** The same job as an API of version 1 wrote it: one flat object. */
const { options, schedule } = job;
const version1 = {
  v: 1,
  completionId: 'chatcmpl-1',
  model: 'tiny-chat',
  replyTo,
  ...options,
  serviceTier: schedule.tier,
  affinityKey: schedule.affinityKey,
  store: job.store,
  acceptedAt: schedule.acceptedAt,
  startDeadline: schedule.startDeadline,
};

const reasonFor = (data: unknown): string => {
  try {
    decodeCompletionJob(data);
  } catch (error) {
    if (error instanceof UnreadableJobError) return error.reason;
    throw error;
  }
  throw new Error('the job was read');
};

const without = (value: object, field: string): Record<string, unknown> => {
  const copy = { ...value } as Record<string, unknown>;
  delete copy[field];
  return copy;
};

const withOptions = (change: Record<string, unknown>): Record<string, unknown> => ({ ...job, options: { ...options, ...change } });

describe('decodeCompletionJob', () => {
  it('reads back a job as the API writes it', () => {
    expect(decodeCompletionJob(JSON.parse(JSON.stringify(job)))).toEqual(job);
  });

  it('keeps fields this version does not name', () => {
    expect(decodeCompletionJob({ ...job, addedLater: { x: 1 } })).toMatchObject({ addedLater: { x: 1 } });
  });

  it('reads a version-1 job, still queued from before, into the command it runs', () => {
    expect(decodeCompletionJob(JSON.parse(JSON.stringify(version1)))).toEqual(job);
  });

  it('reads a version-2 job, still queued from before kinds, as a generate job', () => {
    expect(decodeCompletionJob({ ...without(job, 'kind'), v: 2 })).toEqual(job);
  });

  it('refuses a job of a kind this version does not know, and one its engine does not run, naming the kind', () => {
    expect(reasonFor({ ...job, kind: 'transcribe' })).toBe("the job is of kind 'transcribe'; this worker runs generate, embed, rank, tokenize jobs");
    expect(reasonFor(without(job, 'kind'))).toBe('the job is of kind null; this worker runs generate, embed, rank, tokenize jobs');
    expect(() => decodeCompletionJob(job, [])).toThrow("the job is of kind 'generate'; this worker runs no kind of job");
    expect(() => decodeCompletionJob(embedJob, ['generate'])).toThrow("the job is of kind 'embed'; this worker runs generate jobs");
  });

  it('reads an embed job, its inputs texts or token ids, and checks its options as that kind has them', () => {
    expect(decodeCompletionJob(embedJob)).toEqual(embedJob);
    expect(reasonFor({ ...embedJob, options: { inputs: [3, 4] } })).toMatch(/job\.options\.inputs\[0\].*a string or token ids/);
    // A generate job's options are not an embed job's.
    expect(reasonFor({ ...embedJob, options: job.options })).toMatch(/job\.options\.inputs/);
  });

  it('reads a rank job, its query and documents texts', () => {
    const rankJob: CompletionJobData = { ...embedJob, kind: 'rank', id: 'rerank-1', options: { query: 'who?', documents: ['the dormouse', 'the hatter'] } };
    expect(decodeCompletionJob(rankJob)).toEqual(rankJob);
    expect(reasonFor({ ...rankJob, options: { query: 'who?', documents: [[5, 6]] } })).toMatch(/job\.options\.documents\[0\]/);
    expect(reasonFor({ ...rankJob, options: { documents: ['x'] } })).toMatch(/job\.options\.query/);
  });

  it('reads a job written before versions (no v) as version 1', () => {
    expect(decodeCompletionJob(without(version1, 'v'))).toEqual(job);
  });

  it('reads a version-1 job with only what it had to have', () => {
    const plain = {
      completionId: 'c',
      model: 'm',
      replyTo: { stopWhenUnheard: false },
      messages: [],
      sampling: options.sampling,
      responseFormat: { type: 'text' },
      acceptedAt: 1,
      startDeadline: 2,
    };
    expect(decodeCompletionJob(plain)).toStrictEqual({
      v: 3,
      kind: 'generate',
      id: 'c',
      model: 'm',
      options: { messages: [], sampling: options.sampling, responseFormat: { type: 'text' } },
      replyTo: { stopWhenUnheard: false },
      schedule: { acceptedAt: 1, startDeadline: 2 },
    });
  });

  it("keeps a version-1 job's retention record beside the command, where the retention reads it", () => {
    const removed = { messages: [{ role: 'user', characters: 2 }], characters: 2 };
    expect(decodeCompletionJob({ ...version1, messages: [], contentRemoved: removed })).toMatchObject({ contentRemoved: removed });
  });

  it.each([
    ['a string', 'chat please', 'the job payload is not an object'],
    ['null', null, 'the job payload is not an object'],
    ['an array', [job], 'the job payload is not an object'],
  ])('refuses a payload that is %s', (_kind, data, reason) => {
    expect(reasonFor(data)).toBe(reason);
  });

  it('refuses a version it does not read, saying which', () => {
    expect(reasonFor({ ...job, v: 4 })).toBe('the job payload is version 4; this worker reads versions 1 to 3');
    expect(reasonFor({ ...job, v: 'two' })).toBe('the job payload is an unknown version ("two"); this worker reads versions 1 to 3');
  });

  it('refuses a job without its options, or a part of them, naming the field', () => {
    expect(reasonFor(without(job, 'options'))).toBe('job.options is missing');
    expect(reasonFor(withOptions({ sampling: undefined }))).toBe('job.options.sampling is missing');
    expect(reasonFor(withOptions({ messages: undefined }))).toBe('job.options.messages is missing');
    expect(reasonFor(without(job, 'schedule'))).toBe('job.schedule is missing');
    expect(reasonFor(without(job, 'replyTo'))).toBe('job.replyTo is missing');
    expect(reasonFor(without(job, 'id'))).toBe('job.id is missing');
  });

  it('refuses a version-1 job without its options, naming the field as version 1 named it', () => {
    expect(reasonFor(without(version1, 'sampling'))).toBe('job.sampling is missing');
    expect(reasonFor(without(version1, 'completionId'))).toBe('job.completionId is missing');
    expect(reasonFor({ ...version1, serviceTier: 'gold' })).toBe('job.serviceTier is "gold", not one of "priority", "default", "flex"');
  });

  it.each<[string, Record<string, unknown>, string]>([
    [
      'a message of no known role',
      withOptions({ messages: [{ role: 'narrator', content: 'x' }] }),
      'job.options.messages[0].role is "narrator", not one of "system", "user", "assistant", "tool"',
    ],
    ['a message without content', withOptions({ messages: [{ role: 'user' }] }), 'job.options.messages[0].content is missing'],
    ['a tool message without its call id', withOptions({ messages: [{ role: 'tool', content: 'x' }] }), 'job.options.messages[0].toolCallId is missing'],
    [
      'a temperature that is text',
      withOptions({ sampling: { ...options.sampling, temperature: 'hot' } }),
      'job.options.sampling.temperature is a string, not a number',
    ],
    [
      'a fractional token limit',
      withOptions({ sampling: { ...options.sampling, maxTokens: 1.5 } }),
      'job.options.sampling.maxTokens is a number, not a non-negative integer',
    ],
    [
      'stop sequences that are not a list',
      withOptions({ sampling: { ...options.sampling, stop: 'END' } }),
      'job.options.sampling.stop is a string, not an array',
    ],
    [
      'a tool choice of no known type',
      withOptions({ tools: { ...options.tools, choice: { type: 'any' } } }),
      'job.options.tools.choice.type is "any", not one of "none", "auto", "required", "function"',
    ],
    ['a schema format without its schema', withOptions({ responseFormat: { type: 'json_schema', name: 'x' } }), 'job.options.responseFormat.schema is missing'],
    ['options that are a list', { ...job, options: [options] }, 'job.options is an array, not an object'],
    ['an unknown service tier', { ...job, schedule: { ...schedule, tier: 'gold' } }, 'job.schedule.tier is "gold", not one of "priority", "default", "flex"'],
    ['a reply that does not say whether it stops unheard', { ...job, replyTo: { channel: 'c' } }, 'job.replyTo.stopWhenUnheard is missing'],
    ['a start deadline that is text', { ...job, schedule: { ...schedule, startDeadline: 'soon' } }, 'job.schedule.startDeadline is a string, not a number'],
  ])('refuses %s, naming the field', (_case, data, reason) => {
    expect(reasonFor(data)).toBe(reason);
  });
});

describe('toReplyAddress', () => {
  it('reads where to reply from a job that cannot be read otherwise', () => {
    expect(toReplyAddress({ ...without(job, 'options'), v: 9 })).toMatchObject({ id: 'chatcmpl-1', replyTo, store: job.store });
  });

  it('reads it from a version-1 job too', () => {
    expect(toReplyAddress(without(version1, 'sampling'))).toEqual({ id: 'chatcmpl-1', replyTo, store: job.store });
  });

  it('gives nothing when the reply address itself cannot be read', () => {
    expect(toReplyAddress({ id: 'chatcmpl-1' })).toBeUndefined();
    expect(toReplyAddress({ completionId: 'chatcmpl-1' })).toBeUndefined();
    expect(toReplyAddress('x')).toBeUndefined();
  });
});
