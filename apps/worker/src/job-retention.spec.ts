import type { CompletionJobData, CompletionResult, GrammarSchema } from '@app/contracts';
import { UnrecoverableError } from 'bullmq';
import { ENDED_BEFORE, JobRetention, resultWithoutContent, withoutContent } from './job-retention';
import type { RetainedJob, RetainedJobData } from './job-retention';

const data: CompletionJobData = {
  v: 3,
  kind: 'generate',
  id: 'chatcmpl-retention',
  model: 'tiny-chat',
  replyTo: { channel: 'completion-events:chatcmpl-retention', stopWhenUnheard: true },
  options: {
    responseFormat: { type: 'text' },
    messages: [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'What did Alice see?' },
    ],
    sampling: { temperature: 0, topP: 1, maxTokens: 8, stop: [], frequencyPenalty: 0, presencePenalty: 0, seed: 7 },
  },
  schedule: { acceptedAt: 1_000, startDeadline: 31_000 },
};
const result: CompletionResult = { text: 'a white rabbit', finishReason: 'length', usage: { prompt_tokens: 9, completion_tokens: 3, total_tokens: 12 } };

/** A job as BullMQ hands it over: its data, rewritten in place by updateData. */
function job(): RetainedJob & { writes: RetainedJobData[] } {
  const writes: RetainedJobData[] = [];
  return {
    data,
    writes,
    updateData(next) {
      writes.push(next);
      this.data = next;
      return Promise.resolve();
    },
  };
}

describe('job retention', () => {
  it('keeps ids, sampling, timings and sizes of the messages, not their text', () => {
    const kept = withoutContent(data);
    expect(kept).toEqual({
      ...data,
      options: { ...data.options, messages: [] },
      contentRemoved: {
        messages: [
          { role: 'system', characters: 9 },
          { role: 'user', characters: 19 },
        ],
        characters: 28,
        stop: [],
      },
    });
    expect(JSON.stringify(kept)).not.toMatch(/Alice|brief/);
    expect(withoutContent(kept)).toBe(kept);
  });

  it("keeps only the sizes of a plain-prompt job's prompts", () => {
    if (data.kind !== 'generate') throw new Error('a generate job');
    const plain: CompletionJobData = { ...data, options: { ...data.options, messages: [], prompt: { inputs: ['Once upon a time', [5, 6, 7]], echo: true } } };
    const kept = withoutContent(plain);
    expect(kept.options).toEqual({ ...plain.options, prompt: { inputs: [], echo: true } });
    expect(kept.contentRemoved).toEqual({ messages: [], characters: 16, prompts: [{ characters: 16 }, { tokens: 3 }], stop: [] });
    expect(JSON.stringify(kept)).not.toMatch(/upon/);
  });

  it('keeps the names of tools and of the response format, and only the sizes of their descriptions, schemas and the stop strings', () => {
    const parameters: GrammarSchema = { type: 'object', properties: { burrow: { type: 'string', description: 'Which rabbit hole' } }, required: ['burrow'] };
    const schema: GrammarSchema = { type: 'object', properties: { teaTime: { type: 'string' } } };
    const offered: CompletionJobData = {
      ...data,
      options: {
        ...data.options,
        sampling: { ...data.options.sampling, stop: ['Off with', 'her head'] },
        tools: {
          definitions: [
            { name: 'follow_rabbit', description: 'Follows the White Rabbit down', parameters },
            { name: 'shrink', parameters: { type: 'object', properties: {} } },
          ],
          choice: { type: 'function', name: 'follow_rabbit' },
          parallel: false,
        },
        responseFormat: { type: 'json_schema', name: 'mad_tea_party', schema },
      },
    };
    const kept = withoutContent(offered);
    expect(kept).toEqual({
      ...offered,
      options: {
        messages: [],
        sampling: { ...data.options.sampling, stop: [] },
        tools: {
          definitions: [
            { name: 'follow_rabbit', parameters: {} },
            { name: 'shrink', parameters: {} },
          ],
          choice: { type: 'function', name: 'follow_rabbit' },
          parallel: false,
        },
        responseFormat: { type: 'json_schema', name: 'mad_tea_party', schema: {} },
      },
      contentRemoved: {
        messages: [
          { role: 'system', characters: 9 },
          { role: 'user', characters: 19 },
        ],
        characters: 28,
        tools: [
          { name: 'follow_rabbit', descriptionCharacters: 29, parametersCharacters: JSON.stringify(parameters).length },
          { name: 'shrink', descriptionCharacters: 0, parametersCharacters: 33 },
        ],
        responseFormat: { schemaCharacters: JSON.stringify(schema).length },
        stop: [8, 8],
      },
    });
    expect(JSON.stringify(kept)).not.toMatch(/White Rabbit|burrow|rabbit hole|teaTime|Off with|her head/);
    expect(withoutContent(kept)).toBe(kept);
    // The job as the worker ran it is left as it was: a retry would still need it.
    expect(offered.options.sampling.stop).toEqual(['Off with', 'her head']);
  });

  it('keeps finish reason and usage of the answer, not its text', () => {
    expect(resultWithoutContent(result)).toEqual({ ...result, text: '', contentRemoved: { characters: 14 } });
  });

  it('rewrites a job that ends, answered or failed for good, when contents are not retained', async () => {
    const retention = new JobRetention(false);
    const answered = job();
    await expect(retention.around(() => Promise.resolve(result))(answered)).resolves.toEqual(resultWithoutContent(result));
    expect(answered.writes).toEqual([withoutContent(data)]);

    const failed = job();
    const error = new UnrecoverableError('engine failed');
    await expect(retention.around(() => Promise.reject(error))(failed)).rejects.toBe(error);
    expect(failed.writes).toEqual([withoutContent(data)]);
  });

  it('leaves the messages to a job whose failure BullMQ may retry', async () => {
    const retriable = job();
    const error = new Error('Redis went away');
    await expect(new JobRetention(false).around(() => Promise.reject(error))(retriable)).rejects.toBe(error);
    expect(retriable.writes).toEqual([]);
  });

  it('gives the processor the whole job while it runs, and ends it as it would have when the rewrite fails', async () => {
    const retention = new JobRetention(false);
    const unwritable = { data, updateData: () => Promise.reject(new Error('Connection is closed.')) };
    let seen: CompletionJobData | undefined;
    const answer = await retention.around((running: RetainedJob) => {
      seen = running.data;
      return Promise.resolve(result);
    })(unwritable);
    expect(seen).toBe(data);
    expect(answer.text).toBe('');
  });

  it('does not run again a job that comes back without its contents (its worker died after it ended)', async () => {
    const rerun = { ...job(), data: withoutContent(data) };
    const process = jest.fn(() => Promise.resolve(result));
    for (const retainContent of [false, true]) {
      await expect(new JobRetention(retainContent).around(process)(rerun)).rejects.toThrow(new UnrecoverableError(ENDED_BEFORE));
    }
    expect(process).not.toHaveBeenCalled();
    expect(rerun.writes).toEqual([]);
  });

  it('leaves everything as it is when contents are retained', async () => {
    const retained = job();
    await expect(new JobRetention(true).around(() => Promise.resolve(result))(retained)).resolves.toBe(result);
    expect(retained.writes).toEqual([]);
  });
});
