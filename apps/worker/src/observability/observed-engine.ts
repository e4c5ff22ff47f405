import type { EngineCapabilities, OutputSink } from '@app/contracts';
import { GenerationAbortedError } from '../engine/inference-engine';
import type {
  EmbeddingOutcome,
  EmbeddingRequest,
  GenerationOutcome,
  GenerationRequest,
  InferenceEngine,
  RankOutcome,
  RankRequest,
  TokenizeOutcome,
  TokenizeRequest,
} from '../engine/inference-engine';
import type { WorkerMetrics } from './worker-metrics';

/**
 * Wraps the worker's engine to measure it from the outside: busy and free slots, time to first
 * output, time between outputs, tokens and outcomes. The engine and the use case that calls it stay
 * unaware of metrics.
 */
export class ObservedEngine implements InferenceEngine {
  private busy = 0;
  private readonly labels: { model: string };

  constructor(
    private readonly engine: InferenceEngine,
    private readonly metrics: WorkerMetrics,
  ) {
    this.labels = { model: metrics.model };
    this.setBusy(0);
  }

  get name(): string {
    return this.engine.name;
  }

  get capabilities(): EngineCapabilities {
    return this.engine.capabilities;
  }

  get slots(): number {
    return this.engine.slots;
  }

  get mayBeUnavailable(): boolean {
    return this.engine.mayBeUnavailable === true;
  }

  unhealthy(): Promise<string | undefined> {
    return this.engine.unhealthy?.() ?? Promise.resolve(undefined);
  }

  engineMetrics(): Promise<string> {
    return this.engine.engineMetrics?.() ?? Promise.resolve('');
  }

  /** Slots not generating right now, as the registry announces them. */
  get freeSlots(): number {
    return Math.max(this.engine.slots - this.busy, 0);
  }

  get contextSize(): number {
    return this.engine.contextSize;
  }

  async generate(request: GenerationRequest): Promise<GenerationOutcome> {
    const startedAt = performance.now();
    let lastOutputAt: number | undefined;
    const output: OutputSink = {
      write: (part) => {
        // Generated output only: log probabilities come after the text they score, choice ends mark no token.
        if (part.type === 'text' || part.type === 'reasoning' || part.type === 'tool_call') {
          const now = performance.now();
          if (lastOutputAt === undefined) this.metrics.timeToFirstToken.observe(this.labels, (now - startedAt) / 1000);
          else this.metrics.interTokenLatency.observe(this.labels, (now - lastOutputAt) / 1000);
          lastOutputAt = now;
        }
        request.output.write(part);
      },
    };
    return this.observe(startedAt, async () => {
      const result = await this.engine.generate({ ...request, output });
      this.metrics.generatedTokens.inc(this.labels, result.usage.completion_tokens);
      this.metrics.promptTokens.inc(this.labels, result.usage.prompt_tokens);
      this.metrics.cachedPromptTokens.inc(this.labels, result.usage.prompt_tokens_details?.cached_tokens ?? 0);
      return { result, outcome: result.finishReason };
    });
  }

  embed(request: EmbeddingRequest): Promise<EmbeddingOutcome> {
    return this.observe(performance.now(), async () => {
      const result = await this.engine.embed(request);
      this.metrics.promptTokens.inc(this.labels, result.promptTokens);
      return { result, outcome: 'embedded' };
    });
  }

  rank(request: RankRequest): Promise<RankOutcome> {
    return this.observe(performance.now(), async () => {
      const result = await this.engine.rank(request);
      this.metrics.promptTokens.inc(this.labels, result.promptTokens);
      return { result, outcome: 'ranked' };
    });
  }

  /** A token count takes no sequence: not counted as a generation. */
  tokenize(request: TokenizeRequest): Promise<TokenizeOutcome> {
    return this.engine.tokenize(request);
  }

  /** A job's run counted busy while it lasts, then by outcome and duration. */
  private async observe<T>(startedAt: number, run: () => Promise<{ result: T; outcome: string }>): Promise<T> {
    this.setBusy(this.busy + 1);
    let outcome = 'error';
    try {
      const ran = await run();
      outcome = ran.outcome;
      return ran.result;
    } catch (error) {
      if (error instanceof GenerationAbortedError) outcome = 'aborted';
      throw error;
    } finally {
      this.setBusy(this.busy - 1);
      const labels = { ...this.labels, outcome };
      this.metrics.generations.inc(labels);
      this.metrics.generationDuration.observe(labels, (performance.now() - startedAt) / 1000);
    }
  }

  close(): Promise<void> {
    return this.engine.close();
  }

  private setBusy(busy: number): void {
    this.busy = busy;
    this.metrics.busySlots.set(this.labels, busy);
    this.metrics.freeSlots.set(this.labels, this.freeSlots);
  }
}
