import type { ChatMessage } from './chat-message';

/** Any JSON value; schemas travel in the job as plain JSON. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

/**
 * A JSON Schema as the client sent it, checked at admission by the one schema checker
 * (@app/grammar, schema-grammar.ts), which the worker runs again to build the grammar.
 */
export type GrammarSchema = JsonObject;

/** A function the model may call (OpenAI's `tools[].function`). */
export interface ToolDefinition {
  name: string;
  description?: string;
  /** Its parameters' schema, an object schema as sent. */
  parameters: GrammarSchema;
}

/** OpenAI's `tool_choice`: never, the model's choice, at least one call, or this one function. */
export type ToolChoice = { type: 'none' } | { type: 'auto' } | { type: 'required' } | { type: 'function'; name: string };

export interface ToolOptions {
  definitions: ToolDefinition[];
  choice: ToolChoice;
  /** Whether the model may make more than one call in one answer (`parallel_tool_calls`). */
  parallel: boolean;
}

/**
 * Whether one answer may hold more than one call: `parallel_tool_calls` (on unless refused), and
 * never for a named `tool_choice`, which OpenAI answers with exactly one call of that function.
 */
export const parallelCallsAllowed = (tools: ToolOptions): boolean => tools.parallel && tools.choice.type !== 'function';

/** Whether the request lets the model call a function: tools offered and `tool_choice` not `none`. */
export const callsAllowed = (tools: ToolOptions | undefined): tools is ToolOptions => tools !== undefined && tools.choice.type !== 'none';

/** OpenAI's `response_format`: free text, any JSON object, or JSON that satisfies a schema. */
export type ResponseFormat = { type: 'text' } | { type: 'json_object' } | { type: 'json_schema'; name: string; schema: GrammarSchema };

/** Most alternatives per token that `top_logprobs` may ask for (OpenAI's bound). */
export const MAX_TOP_LOGPROBS = 20;

/** OpenAI's `logprobs` / `top_logprobs`: each generated token's log probability and its top alternatives. */
export interface LogprobsOptions {
  /** Alternatives per position, 0 to MAX_TOP_LOGPROBS. */
  top: number;
}

/**
 * What of its prompt a job leaves for later requests to reuse (OpenAI's prompt caching): the
 * whole conversation and its answer (what the next turn begins with; its start, system messages
 * and tools, is what other requests share) unless `implicit` is false
 * (`prompt_cache_options.mode: "explicit"`): then only the prompt up to its latest explicit
 * `prompt_cache_breakpoint`. Absent means implicit. It never changes an answer.
 */
export interface PromptCachePolicy {
  implicit: boolean;
  /** The latest breakpoint: after the first `offset` characters of message `message`'s content. */
  breakpoint?: { message: number; offset: number };
}

/** One plain prompt (OpenAI's legacy completions): text, read as the model's tokenizer reads it, or token ids. */
export type PromptInput = string | number[];

/**
 * A plain-prompt job (`POST /v1/completions`): no chat template, the prompts evaluated as they
 * are, each answered `choices` times (choice `p * choices + c` is prompt p's answer c). With
 * `echo` each answer begins with its prompt (and, with `logprobs`, its prompt's log probabilities).
 */
export interface PlainPrompt {
  inputs: PromptInput[];
  echo: boolean;
  /** Text after the answer: the model fills in the middle between each prompt and it (its FIM tokens). */
  suffix?: string;
}

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
  /** Added to these tokens' logits before sampling (OpenAI's `logit_bias`; -100 bans a token). */
  logitBias?: Array<{ token: number; bias: number }>;
}

/**
 * Everything that decides what a completion generates, in one object that every engine takes as
 * it is: a front door maps its protocol to it, the job carries it, and the worker hands it on.
 * Where it runs and where the answer goes are not here (the job's `schedule`, `replyTo`, `store`).
 */
export interface GenerationOptions {
  /** The conversation the chat template renders; empty for a plain prompt. */
  messages: ChatMessage[];
  /** Set instead of messages: prompts evaluated without a template (an engine takes one at a time, `inputs[0]`). */
  prompt?: PlainPrompt;
  /** Sampling, stop sequences, the token limit, the seed and logit bias. */
  sampling: SamplingParams;
  /** Functions the model may call, and whether it must; absent when the request offers none. */
  tools?: ToolOptions;
  /** Choices to generate (OpenAI's `n`); absent means one. */
  choices?: number;
  /** JSON enforced by a grammar; free text when absent (the front doors always set it). */
  responseFormat?: ResponseFormat;
  /** Log probabilities of the generated tokens; absent when not asked for. */
  logprobs?: LogprobsOptions;
  /**
   * false: a reasoning model answers without thinking (`reasoning_effort` `none` or `minimal`, as
   * llama.cpp's server reads them); absent: it thinks as its chat template does by default.
   */
  thinking?: boolean;
  /**
   * `auto`: a conversation too long for the model's context loses its oldest messages (after its
   * leading system messages) until prompt and answer fit (the Responses API's `truncation`);
   * absent: it is refused (`context_length_exceeded`).
   */
  truncation?: 'auto';
  /** What of the prompt to keep for later requests; absent means the whole conversation and its answer. */
  promptCache?: PromptCachePolicy;
}
