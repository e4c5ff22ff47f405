import { callsAllowed } from './generation-options';
import type { JobKind } from './completion-job';
import type { GenerationOptions, SamplingParams } from './generation-options';

/** Most choices (`n`) one request may ask for: the worker generates them one after another. */
export const MAX_CHOICES = 8;

/**
 * What an engine can honour beyond plain sampling. A worker announces its engine's
 * capabilities; the API refuses at admission, with a 400 naming the field, a request that needs
 * one the serving engines lack, instead of queueing work that would fail or be half-applied.
 */
export interface EngineCapabilities {
  /** The kinds of job it runs (a worker fails any other unrun; the API refuses them before queueing). */
  kinds: JobKind[];
  /** Function calling (`tools`, `tool_choice`). */
  tools: boolean;
  /** Output constrained by a grammar (`response_format` json_object / json_schema). */
  grammar: boolean;
  /** Token log probabilities (`logprobs`, `top_logprobs`). */
  logprobs: boolean;
  /** Most choices (`n`) one request may ask for. */
  maxChoices: number;
  /**
   * Plain prompts, evaluated without a chat template (`POST /v1/completions`'s `prompt`, `echo`).
   * Absent (an engine, or a worker of an earlier version, that does not say so) means none.
   */
  plainPrompts?: boolean;
  /** Fill-in-the-middle of plain prompts (`suffix`): a model with FIM tokens. Absent means none. */
  fillInTheMiddle?: boolean;
  /** Log probabilities of an echoed plain prompt's own tokens (`echo` with `logprobs`). Absent means none. */
  promptLogprobs?: boolean;
  /** Token ids `logit_bias` may name (its vocabulary size); 0 when it cannot apply logit_bias. */
  logitBiasTokens: number;
  /**
   * Token ids `logit_bias` may not name although they are in the vocabulary: node-llama-cpp's
   * TokenBias skips a bias on an end-of-generation token, so it would be dropped without a word.
   */
  unbiasableTokens: number[];
}

export type EngineCapability = keyof EngineCapabilities;

/** What a request needs of an engine, named by the request field that needs it. */
export interface RequiredCapability {
  capability: Exclude<EngineCapability, 'kinds' | 'maxChoices' | 'logitBiasTokens' | 'unbiasableTokens'>;
  /** The request field that asks for it, for the 400's `param`. */
  param: string;
}

/** What a job needs of the engine that runs it, each named by the request field that asks for it. */
export function requiredCapabilities(job: Pick<GenerationOptions, 'tools' | 'responseFormat' | 'logprobs' | 'prompt'>): RequiredCapability[] {
  const needs: RequiredCapability[] = [];
  if (job.prompt) needs.push({ capability: 'plainPrompts', param: 'prompt' });
  if (job.prompt?.suffix !== undefined) needs.push({ capability: 'fillInTheMiddle', param: 'suffix' });
  if (callsAllowed(job.tools)) needs.push({ capability: 'tools', param: 'tools' });
  if (job.responseFormat !== undefined && job.responseFormat.type !== 'text') needs.push({ capability: 'grammar', param: 'response_format' });
  if (job.logprobs) needs.push({ capability: 'logprobs', param: 'logprobs' });
  if (job.prompt?.echo && job.logprobs) needs.push({ capability: 'promptLogprobs', param: 'echo' });
  return needs;
}

/** Why `logit_bias` cannot apply exactly on an engine: none at all, a token outside its vocabulary, or one it cannot bias. */
export type LogitBiasRefusal = { unsupported: true } | { highest: number } | { unbiasable: number };

export function logitBiasRefusal(
  bias: SamplingParams['logitBias'],
  capabilities: Pick<EngineCapabilities, 'logitBiasTokens' | 'unbiasableTokens'>,
): LogitBiasRefusal | undefined {
  if (!bias || bias.length === 0) return undefined;
  if (capabilities.logitBiasTokens === 0) return { unsupported: true };
  const highest = Math.max(...bias.map(({ token }) => token));
  if (highest >= capabilities.logitBiasTokens) return { highest };
  const unbiasable = bias.find(({ token }) => capabilities.unbiasableTokens.includes(token));
  return unbiasable ? { unbiasable: unbiasable.token } : undefined;
}

/** What about `logit_bias` an engine cannot honour, as an error message says it. */
export function describeLogitBiasRefusal(refusal: LogitBiasRefusal): string {
  if ('highest' in refusal) return `logit_bias for token ${refusal.highest}, which is not in its vocabulary`;
  if ('unbiasable' in refusal) return `logit_bias on the end-of-generation token ${refusal.unbiasable}`;
  return 'logit_bias';
}
