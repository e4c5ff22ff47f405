import type { ChatMessage } from './chat-message';

/** Sampling settings as the engine applies them, already defaulted and validated by the API. */
export interface SamplingParams {
  temperature: number;
  topP: number;
  /** Upper bound on generated tokens; absent means "until the context is full". */
  maxTokens?: number;
  stop: string[];
  frequencyPenalty: number;
  presencePenalty: number;
  /** Always set: the client's seed, or one drawn by the API, so a retried job samples the same way. */
  seed: number;
}

/** The payload of one chat completion job; the job id is the completion id. */
export interface CompletionJobData {
  completionId: string;
  model: string;
  messages: ChatMessage[];
  sampling: SamplingParams;
  /** Unix milliseconds when the API accepted the request. */
  acceptedAt: number;
  /**
   * Unix milliseconds after which nobody waits for this job to start: the API has answered
   * "no capacity" by then, so a worker that picks it up later drops it unrun.
   */
  startDeadline: number;
}

/** OpenAI's finish reasons that this service produces. */
export type FinishReason = 'stop' | 'length';

export interface CompletionUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** The job's return value: the whole answer, for operators and for clients that reconnect. */
export interface CompletionResult {
  text: string;
  finishReason: FinishReason;
  usage: CompletionUsage;
}
