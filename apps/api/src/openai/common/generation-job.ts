import { callsAllowed } from '@app/contracts';
import type {
  ChatMessage,
  GenerateJobInput,
  LogprobsOptions,
  PlainPrompt,
  PromptCachePolicy,
  ResponseFormat,
  SamplingParams,
  ToolOptions,
} from '@app/contracts';
import { randomInt } from 'node:crypto';
import { OpenAiError } from '../../errors/openai-error';
import { clientAffinityKey } from '../../pipeline/affinity-key';
import type { GenerationRequestDto } from './generation-request.dto';

/** What a door has made of its request, in the engine's terms; `generationJob` adds the rest. */
export interface GenerationParts {
  id: string;
  /** The fields of the request every generating door reads alike. */
  request: Pick<GenerationRequestDto, 'model' | 'temperature' | 'top_p' | 'frequency_penalty' | 'presence_penalty' | 'prompt_cache_key'>;
  messages: ChatMessage[];
  /** Plain prompts instead of messages (the legacy completions door). */
  prompt?: PlainPrompt;
  /** What the door's fields say of sampling beyond the shared ones. */
  sampling: Pick<SamplingParams, 'maxTokens' | 'stop' | 'seed' | 'logitBias'>;
  tools?: ToolOptions;
  responseFormat: ResponseFormat;
  logprobs?: LogprobsOptions;
  /** The door's reasoning effort (`reasoning_effort`, `reasoning.effort`). */
  reasoningEffort?: string;
  promptCache?: PromptCachePolicy;
  truncation?: 'auto';
  choices?: number;
  /** Placement's key when the client sent no `prompt_cache_key` (a continued response's). */
  fallbackAffinityKey?: string;
  /** The door's names for the fields `refuseConflicts` points at. */
  conflictParams: ConflictParams;
  acceptedAt: number;
  maxQueueWaitMs: number;
}

/** Where a door names the fields the refusals below point at. */
export interface ConflictParams {
  format: string;
  logprobs: string;
}

/**
 * Refuses what no engine here can honour together: a structured format, or log probabilities,
 * while the model may call a tool (the grammar and the scores are the answer's text; a call's
 * arguments are not). OpenAI answers both with 400 naming the field.
 */
function refuseConflicts(tools: ToolOptions | undefined, format: ResponseFormat, logprobs: LogprobsOptions | undefined, params: ConflictParams): void {
  if (!callsAllowed(tools)) return;
  const either = `set 'tool_choice' to 'none' or drop one`;
  if (format.type !== 'text') {
    throw OpenAiError.invalidRequest(`'${params.format}' other than text cannot be combined with tool calls; ${either}.`, params.format, 'invalid_value');
  }
  if (logprobs) throw OpenAiError.invalidRequest(`'${params.logprobs}' cannot be combined with tool calls here; ${either}.`, params.logprobs, 'invalid_value');
}

/** The seed a job samples with: llama.cpp takes 32 bits, OpenAI any integer; without one, answers must still vary. */
export const samplingSeed = (seed: number | undefined): number => (seed === undefined ? randomInt(2 ** 32) : seed >>> 0);

/** The job a worker runs for a door's request, with OpenAI's defaults filled in. */
export function generationJob(parts: GenerationParts): GenerateJobInput {
  const { request, tools, responseFormat, logprobs, promptCache } = parts;
  refuseConflicts(tools, responseFormat, logprobs, parts.conflictParams);
  const affinityKey = clientAffinityKey(request.prompt_cache_key) ?? parts.fallbackAffinityKey;
  const effort = parts.reasoningEffort;
  return {
    kind: 'generate',
    id: parts.id,
    model: request.model,
    options: {
      messages: parts.messages,
      ...(parts.prompt ? { prompt: parts.prompt } : {}),
      sampling: {
        temperature: request.temperature ?? 1,
        topP: request.top_p ?? 1,
        maxTokens: parts.sampling.maxTokens,
        stop: parts.sampling.stop,
        frequencyPenalty: request.frequency_penalty ?? 0,
        presencePenalty: request.presence_penalty ?? 0,
        seed: parts.sampling.seed,
        ...(parts.sampling.logitBias ? { logitBias: parts.sampling.logitBias } : {}),
      },
      ...(tools ? { tools } : {}),
      ...(parts.choices !== undefined && parts.choices > 1 ? { choices: parts.choices } : {}),
      responseFormat,
      ...(logprobs ? { logprobs } : {}),
      // llama.cpp's server: `none` and `minimal` answer without thinking; the other efforts think as the template does.
      ...(effort === 'none' || effort === 'minimal' ? { thinking: false } : {}),
      ...(promptCache ? { promptCache } : {}),
      // Only the worker knows how many tokens the conversation is: it drops the oldest items there.
      ...(parts.truncation ? { truncation: parts.truncation } : {}),
    },
    // Without a key, placement hashes the conversation's start itself, and only when affinity is on.
    schedule: { acceptedAt: parts.acceptedAt, startDeadline: parts.acceptedAt + parts.maxQueueWaitMs, ...(affinityKey ? { affinityKey } : {}) },
  };
}
