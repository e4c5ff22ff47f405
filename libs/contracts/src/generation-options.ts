/** Any JSON value; schemas travel in the job as plain JSON. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

/**
 * A JSON Schema as the client sent it, checked at admission by the one schema checker
 * (json-schema/schema-grammar.ts), which the worker runs again to build the grammar.
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
