// Nest 12 is ESM-only, which jest cannot require on Node 20; the metrics need no more of it than this.
jest.mock('@nestjs/common', () => ({ Injectable: () => () => undefined }));

import { GenerationAbortedError } from '../engine/inference-engine';
import type { GenerationOutcome, GenerationRequest, InferenceEngine } from '../engine/inference-engine';
import type { WorkerEnv } from '@app/config';
import type { EngineCapabilities } from '@app/contracts';
import { ObservedEngine } from './observed-engine';
import { WorkerMetrics } from './worker-metrics';

/** An engine whose generations end when the test says so. */
class ManualEngine implements InferenceEngine {
  readonly name = 'manual';
  readonly capabilities: EngineCapabilities = {
    kinds: ['generate'],
    tools: false,
    grammar: false,
    logprobs: false,
    maxChoices: 1,
    logitBiasTokens: 0,
    unbiasableTokens: [],
  };
  readonly slots = 2;
  readonly contextSize = 256;
  readonly pending: Array<{ request: GenerationRequest; finish: (outcome: GenerationOutcome) => void; fail: (error: Error) => void }> = [];

  generate(request: GenerationRequest): Promise<GenerationOutcome> {
    return new Promise((finish, fail) => this.pending.push({ request, finish, fail }));
  }

  embed(): Promise<never> {
    return Promise.reject(new Error('this engine only generates'));
  }

  rank(): Promise<never> {
    return Promise.reject(new Error('this engine only generates'));
  }

  tokenize(): Promise<never> {
    return Promise.reject(new Error('this engine only generates'));
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

const request = (onText: (text: string) => void = () => undefined): GenerationRequest => ({
  messages: [{ role: 'user', content: 'Hi' }],
  sampling: { temperature: 1, topP: 1, stop: [], frequencyPenalty: 0, presencePenalty: 0, seed: 1 },
  signal: new AbortController().signal,
  output: { write: (part) => onText(part.type === 'text' ? part.text : '') },
});

/** Sum of the samples called `name` (a histogram's `_count` included) whose labels include `labels`. */
async function value(metrics: WorkerMetrics, name: string, labels: Record<string, string> = {}): Promise<number> {
  return (
    (await metrics.registry.getMetricsAsJSON())
      // Histogram samples carry their own name (`_bucket`, `_sum`, `_count`); prom-client's JSON type leaves it out.
      .flatMap((metric) => metric.values.map((sample) => ({ ...sample, name: (sample as { metricName?: string }).metricName ?? metric.name })))
      .filter((sample) => sample.name === name && Object.entries(labels).every(([key, expected]) => sample.labels[key] === expected))
      .reduce((sum, sample) => sum + sample.value, 0)
  );
}

describe('ObservedEngine', () => {
  const setup = () => {
    const metrics = new WorkerMetrics({ MODEL_NAME: 'm' } as WorkerEnv);
    const inner = new ManualEngine();
    return { metrics, inner, engine: new ObservedEngine(inner, metrics) };
  };

  it('counts busy and free slots, first and later texts, tokens and outcomes', async () => {
    const { metrics, inner, engine } = setup();
    expect(await value(metrics, 'llm_worker_free_slots')).toBe(2);
    const seen: string[] = [];
    const running = engine.generate(request((text) => seen.push(text)));
    expect(await value(metrics, 'llm_worker_busy_slots')).toBe(1);
    expect(await value(metrics, 'llm_worker_free_slots')).toBe(1);

    const [{ request: passed, finish }] = inner.pending;
    for (const text of ['Once', ' upon', ' a']) passed.output.write({ type: 'text', choice: 0, text });
    finish({
      text: 'Once upon a',
      finishReason: 'length',
      usage: { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8, prompt_tokens_details: { cached_tokens: 4 } },
    });
    await running;

    expect(seen).toEqual(['Once', ' upon', ' a']);
    expect(await value(metrics, 'llm_worker_time_to_first_token_seconds_count')).toBe(1);
    expect(await value(metrics, 'llm_worker_inter_token_latency_seconds_count')).toBe(2);
    expect(await value(metrics, 'llm_worker_generated_tokens_total')).toBe(3);
    expect(await value(metrics, 'llm_worker_prompt_tokens_total')).toBe(5);
    expect(await value(metrics, 'llm_worker_cached_prompt_tokens_total')).toBe(4);
    expect(await value(metrics, 'llm_worker_generations_total', { outcome: 'length' })).toBe(1);
    expect(await value(metrics, 'llm_worker_busy_slots')).toBe(0);
    expect(await value(metrics, 'llm_worker_free_slots')).toBe(2);
  });

  it('records an aborted generation as aborted and frees its slot', async () => {
    const { metrics, inner, engine } = setup();
    const running = engine.generate(request());
    inner.pending[0].fail(new GenerationAbortedError());
    await expect(running).rejects.toBeInstanceOf(GenerationAbortedError);
    expect(await value(metrics, 'llm_worker_generations_total', { outcome: 'aborted' })).toBe(1);
    expect(await value(metrics, 'llm_worker_generated_tokens_total')).toBe(0);
    expect(await value(metrics, 'llm_worker_busy_slots')).toBe(0);
  });
});
