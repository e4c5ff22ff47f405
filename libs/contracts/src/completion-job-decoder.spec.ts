import { toCompletionJob, toReplyAddress, UnreadableJobError } from './completion-job-decoder';
import type { CompletionJobData } from './completion-job';

const job: CompletionJobData = {
  v: 1,
  completionId: 'chatcmpl-1',
  model: 'tiny-chat',
  replyTo: { channel: 'completion-replies:api-1', stopWhenUnheard: true, log: { key: 'log', keepMs: 60_000, maxEvents: 1000 }, leaseKey: 'lease' },
  messages: [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'Hi' },
    { role: 'assistant', content: '', toolCalls: [{ id: 'call_1', name: 'look', arguments: '{}' }] },
    { role: 'tool', content: 'found', toolCallId: 'call_1' },
  ],
  sampling: { temperature: 0.7, topP: 1, maxTokens: 16, stop: ['\n'], frequencyPenalty: 0, presencePenalty: 0, seed: 42, logitBias: [{ token: 7, bias: -100 }] },
  tools: { definitions: [{ name: 'look', parameters: { type: 'object', properties: {} } }], choice: { type: 'function', name: 'look' }, parallel: false },
  choices: 2,
  responseFormat: { type: 'json_schema', name: 'answer', schema: { type: 'object' } },
  logprobs: { top: 3 },
  promptCache: { implicit: false, breakpoint: { message: 1, offset: 2 } },
  serviceTier: 'flex',
  store: { key: 'answer', ttlMs: 1000 },
  acceptedAt: 1_700_000_000_000,
  startDeadline: 1_700_000_030_000,
};

const reasonFor = (data: unknown): string => {
  try {
    toCompletionJob(data);
  } catch (error) {
    if (error instanceof UnreadableJobError) return error.reason;
    throw error;
  }
  throw new Error('the job was read');
};

const without = (field: keyof CompletionJobData): Record<string, unknown> => {
  const copy: Record<string, unknown> = { ...job };
  delete copy[field];
  return copy;
};

describe('toCompletionJob', () => {
  it('reads back a job as the API writes it', () => {
    expect(toCompletionJob(JSON.parse(JSON.stringify(job)))).toEqual(job);
  });

  it('reads a job written before versions (no v) as version 1', () => {
    expect(toCompletionJob(without('v'))).toEqual(job);
  });

  it('keeps fields this version does not name', () => {
    expect(toCompletionJob({ ...job, addedLater: { x: 1 } })).toMatchObject({ addedLater: { x: 1 } });
  });

  it.each([
    ['a string', 'chat please', 'the job payload is not an object'],
    ['null', null, 'the job payload is not an object'],
    ['an array', [job], 'the job payload is not an object'],
  ])('refuses a payload that is %s', (_kind, data, reason) => {
    expect(reasonFor(data)).toBe(reason);
  });

  it('refuses a version it does not read, saying which', () => {
    expect(reasonFor({ ...job, v: 2 })).toBe('the job payload is version 2; this worker reads version 1');
    expect(reasonFor({ ...job, v: 'two' })).toBe('the job payload is an unknown version ("two"); this worker reads version 1');
  });

  it('refuses a job without its options, naming the field', () => {
    expect(reasonFor(without('sampling'))).toBe('job.sampling is missing');
    expect(reasonFor(without('messages'))).toBe('job.messages is missing');
    expect(reasonFor(without('responseFormat'))).toBe('job.responseFormat is missing');
    expect(reasonFor(without('replyTo'))).toBe('job.replyTo is missing');
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['a message of no known role', { messages: [{ role: 'narrator', content: 'x' }] }, 'job.messages[0].role is "narrator", not one of "system", "user", "assistant", "tool"'],
    ['a message without content', { messages: [{ role: 'user' }] }, 'job.messages[0].content is missing'],
    ['a tool message without its call id', { messages: [{ role: 'tool', content: 'x' }] }, 'job.messages[0].toolCallId is missing'],
    ['a temperature that is text', { sampling: { ...job.sampling, temperature: 'hot' } }, 'job.sampling.temperature is a string, not a number'],
    ['a fractional token limit', { sampling: { ...job.sampling, maxTokens: 1.5 } }, 'job.sampling.maxTokens is a number, not a non-negative integer'],
    ['stop sequences that are not a list', { sampling: { ...job.sampling, stop: 'END' } }, 'job.sampling.stop is a string, not an array'],
    ['a tool choice of no known type', { tools: { ...job.tools, choice: { type: 'any' } } }, 'job.tools.choice.type is "any", not one of "none", "auto", "required", "function"'],
    ['a schema format without its schema', { responseFormat: { type: 'json_schema', name: 'x' } }, 'job.responseFormat.schema is missing'],
    ['an unknown service tier', { serviceTier: 'gold' }, 'job.serviceTier is "gold", not one of "priority", "default", "flex"'],
    ['a reply that does not say whether it stops unheard', { replyTo: { channel: 'c' } }, 'job.replyTo.stopWhenUnheard is missing'],
    ['a start deadline that is text', { startDeadline: 'soon' }, 'job.startDeadline is a string, not a number'],
  ])('refuses %s, naming the field', (_case, change, reason) => {
    expect(reasonFor({ ...job, ...change })).toBe(reason);
  });
});

describe('toReplyAddress', () => {
  it('reads where to reply from a job that cannot be read otherwise', () => {
    expect(toReplyAddress({ ...without('sampling'), v: 9 })).toMatchObject({ completionId: 'chatcmpl-1', replyTo: job.replyTo, store: job.store });
  });

  it('gives nothing when the reply address itself cannot be read', () => {
    expect(toReplyAddress({ completionId: 'chatcmpl-1' })).toBeUndefined();
    expect(toReplyAddress('x')).toBeUndefined();
  });
});
