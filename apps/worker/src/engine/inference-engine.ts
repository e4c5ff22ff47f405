import type { ChatMessage, CompletionUsage, FinishReason, SamplingParams } from '@app/contracts';

export interface GenerationRequest {
  messages: ChatMessage[];
  sampling: SamplingParams;
  /** Aborted when nobody wants the answer any more; the engine stops and frees its slot. */
  signal: AbortSignal;
  /** Receives text as it is generated; never a partial stop sequence. */
  onText: (text: string) => void;
}

export interface GenerationOutcome {
  text: string;
  finishReason: FinishReason;
  usage: CompletionUsage;
}

/** One loaded model that generates chat completions; the worker holds exactly one. */
export interface InferenceEngine {
  /** Completions it can generate at once (its parallel sequences). */
  readonly slots: number;
  /** Tokens of prompt plus answer that fit in one sequence. */
  readonly contextSize: number;
  generate(request: GenerationRequest): Promise<GenerationOutcome>;
  close(): Promise<void>;
}

export const INFERENCE_ENGINE = Symbol('INFERENCE_ENGINE');

/** Prompt plus requested answer do not fit in the model's context. */
export class ContextLengthExceededError extends Error {
  constructor(contextSize: number, promptTokens: number, maxTokens: number | undefined) {
    const requested =
      maxTokens === undefined
        ? `your messages resulted in ${promptTokens} tokens`
        : `you requested ${promptTokens + maxTokens} tokens (${promptTokens} in the messages, ${maxTokens} in the completion)`;
    super(`This model's maximum context length is ${contextSize} tokens. However, ${requested}. Please reduce the length of the messages or completion.`);
    this.name = 'ContextLengthExceededError';
  }
}

/** Generation stopped because its signal was aborted. */
export class GenerationAbortedError extends Error {
  constructor() {
    super('generation aborted');
    this.name = 'GenerationAbortedError';
  }
}
