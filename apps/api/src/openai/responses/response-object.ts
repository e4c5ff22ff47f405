import type { CompletionUsage, ServiceTier } from '@app/contracts';
import type { ResponseSettings } from './responses-job.mapper';

export type ResponseStatus = 'queued' | 'in_progress' | 'completed' | 'incomplete' | 'failed' | 'cancelled';

/** What a response states besides its settings: where it stands and what it produced so far. */
export interface ResponseState {
  status: ResponseStatus;
  output: object[];
  usage?: CompletionUsage;
  error?: { code: string; message: string };
  /** Why it is `incomplete` when its token bound is not why (`max_tool_calls`). */
  incompleteReason?: string;
  /** Unix milliseconds when it completed (status `completed` only). */
  completedAtMs?: number;
}

/** Identifies one response: what its Response objects say besides their state. */
export interface ResponseIdentity {
  id: string;
  model: string;
  createdAtMs: number;
  serviceTier: ServiceTier;
  settings: ResponseSettings;
}

/** OpenAI's usage of a response, from the engine's: cached prompt tokens and the output tokens a reasoning model spent thinking. */
export function responseUsage(usage: CompletionUsage): object {
  return {
    input_tokens: usage.prompt_tokens,
    input_tokens_details: { cached_tokens: usage.prompt_tokens_details?.cached_tokens ?? 0, cache_write_tokens: 0 },
    output_tokens: usage.completion_tokens,
    output_tokens_details: { reasoning_tokens: usage.completion_tokens_details?.reasoning_tokens ?? 0 },
    total_tokens: usage.total_tokens,
  };
}

/** OpenAI's Response object. */
export function responseObject(identity: ResponseIdentity, state: ResponseState): object {
  const { settings } = identity;
  return {
    id: identity.id,
    object: 'response',
    created_at: Math.floor(identity.createdAtMs / 1000),
    status: state.status,
    background: settings.background,
    completed_at: state.completedAtMs === undefined ? null : Math.floor(state.completedAtMs / 1000),
    error: state.error ?? null,
    incomplete_details: state.status === 'incomplete' ? { reason: state.incompleteReason ?? 'max_output_tokens' } : null,
    instructions: settings.instructions,
    max_output_tokens: settings.maxOutputTokens,
    max_tool_calls: settings.maxToolCalls ?? null,
    model: identity.model,
    output: state.output,
    parallel_tool_calls: settings.parallelToolCalls,
    previous_response_id: settings.previousResponseId,
    conversation: settings.conversation ? { id: settings.conversation } : null,
    prompt_cache_key: settings.promptCacheKey,
    reasoning: settings.reasoning,
    safety_identifier: settings.safetyIdentifier,
    service_tier: identity.serviceTier,
    store: settings.store,
    temperature: settings.temperature,
    text: { format: settings.textFormat, verbosity: 'medium' },
    tool_choice: settings.toolChoice,
    tools: settings.tools,
    top_logprobs: settings.topLogprobs,
    top_p: settings.topP,
    // Not in OpenAI's document of this commit, which allows them; Open Responses requires both.
    frequency_penalty: settings.frequencyPenalty,
    presence_penalty: settings.presencePenalty,
    truncation: settings.truncation,
    // null until the response has ended, as OpenAI sends it and Open Responses requires (OpenAI's document omits the null).
    usage: state.usage ? responseUsage(state.usage) : null,
    // A string in OpenAI's schema: absent rather than null when not given.
    ...(settings.user === null ? {} : { user: settings.user }),
    metadata: settings.metadata,
  };
}
