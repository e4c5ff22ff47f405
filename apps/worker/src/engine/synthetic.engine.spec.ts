import type { OutputPart, SamplingParams } from '@app/contracts';
import { getEventListeners } from 'node:events';
import { GenerationAbortedError } from './inference-engine';
import { SyntheticEngine, syntheticToken } from './synthetic.engine';
import type { SyntheticEngineOptions } from './synthetic.engine';

const sampling = (overrides: Partial<SamplingParams> = {}): SamplingParams => ({
  temperature: 0,
  topP: 1,
  stop: [],
  frequencyPenalty: 0,
  presencePenalty: 0,
  seed: 1,
  ...overrides,
});

const engine = (overrides: Partial<SyntheticEngineOptions> = {}): SyntheticEngine =>
  new SyntheticEngine({ tokens: 8, tokenIntervalMs: 0, slots: 4, contextSize: 4096, ...overrides });

const messages = [{ role: 'user' as const, content: 'Hello there' }];

async function collect(
  subject: SyntheticEngine,
  params: SamplingParams,
  signal = new AbortController().signal,
): Promise<{ pieces: string[]; outcome: Awaited<ReturnType<SyntheticEngine['generate']>> }> {
  const pieces: string[] = [];
  const output = { write: (part: OutputPart) => pieces.push(part.type === 'text' ? part.text : '') };
  const outcome = await subject.generate({ messages, sampling: params, signal, output });
  return { pieces, outcome };
}

const answer = (tokens: number): string => Array.from({ length: tokens }, (_, index) => syntheticToken(index)).join('');

describe('SyntheticEngine', () => {
  afterEach(() => jest.useRealTimers());

  it('emits its configured number of tokens and ends with stop', async () => {
    const { pieces, outcome } = await collect(engine(), sampling());
    expect(pieces).toHaveLength(8);
    expect(pieces.join('')).toBe(answer(8));
    expect(outcome).toMatchObject({ text: answer(8), finishReason: 'stop' });
    expect(outcome.usage.completion_tokens).toBe(8);
    expect(outcome.usage.total_tokens).toBe(outcome.usage.prompt_tokens + 8);
  });

  it('emits the first token at once and the others the configured interval apart', async () => {
    jest.useFakeTimers();
    const times: number[] = [];
    const start = performance.now();
    const generation = engine({ tokens: 4, tokenIntervalMs: 50 }).generate({
      messages,
      sampling: sampling(),
      signal: new AbortController().signal,
      output: { write: () => times.push(performance.now() - start) },
    });
    await jest.advanceTimersByTimeAsync(1000);
    await generation;
    expect(times).toEqual([0, 50, 100, 150]);
  });

  it('stops at max_tokens with finish_reason length', async () => {
    const { pieces, outcome } = await collect(engine(), sampling({ maxTokens: 3 }));
    expect(pieces.join('')).toBe(answer(3));
    expect(outcome).toMatchObject({ finishReason: 'length', usage: { completion_tokens: 3 } });
  });

  it('ends before a stop sequence and never sends any part of it', async () => {
    // The answer runs "the quick brown fox jumps ..."; the stop sequence spans two tokens.
    const { pieces, outcome } = await collect(engine(), sampling({ stop: ['brown fo'] }));
    expect(outcome.text).toBe('the quick ');
    expect(outcome.finishReason).toBe('stop');
    expect(pieces.join('')).toBe('the quick ');
    expect(pieces.some((piece) => piece.includes('brown'))).toBe(false);
  });

  it('sends text held back for a stop sequence that never completes', async () => {
    const { pieces, outcome } = await collect(engine({ tokens: 3 }), sampling({ stop: [' brown bear'] }));
    expect(pieces.join('')).toBe(answer(3));
    expect(outcome).toMatchObject({ text: answer(3), finishReason: 'stop' });
  });

  it("listens to the job's signal once per answer, and not after it has ended", async () => {
    const signal = new AbortController().signal;
    let mostListeners = 0;
    const output = { write: () => void (mostListeners = Math.max(mostListeners, getEventListeners(signal, 'abort').length)) };
    const subject = engine({ tokens: 20, tokenIntervalMs: 1 });
    await subject.generate({ messages, sampling: sampling(), signal, output });
    await subject.generate({ messages, sampling: sampling({ stop: ['brown'] }), signal, output });
    expect(mostListeners).toBe(1);
    expect(getEventListeners(signal, 'abort')).toHaveLength(0);
  });

  it('stops with GenerationAbortedError when its signal is aborted', async () => {
    jest.useFakeTimers();
    const controller = new AbortController();
    const pieces: string[] = [];
    const generation = engine({ tokens: 100, tokenIntervalMs: 10 }).generate({
      messages,
      sampling: sampling(),
      signal: controller.signal,
      output: { write: (part) => pieces.push(part.type === 'text' ? part.text : '') },
    });
    const settled = expect(generation).rejects.toBeInstanceOf(GenerationAbortedError);
    await jest.advanceTimersByTimeAsync(25);
    controller.abort();
    await settled;
    expect(pieces).toHaveLength(3);
    await jest.advanceTimersByTimeAsync(1000);
    expect(pieces).toHaveLength(3);
  });

  it('refuses a prompt or a max_tokens that leaves no room in its context', async () => {
    const long = [{ role: 'user' as const, content: 'word '.repeat(300) }];
    await expect(
      engine({ contextSize: 256 }).generate({ messages: long, sampling: sampling(), signal: new AbortController().signal, output: { write: () => undefined } }),
    ).rejects.toThrow(/maximum context length/);
    await expect(
      engine({ contextSize: 256 }).generate({
        messages,
        sampling: sampling({ maxTokens: 300 }),
        signal: new AbortController().signal,
        output: { write: () => undefined },
      }),
    ).rejects.toThrow(/maximum context length/);
  });
});
