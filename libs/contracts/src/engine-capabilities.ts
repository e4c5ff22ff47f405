import type { CompletionJobInput, SamplingParams } from './completion-job';
import { callsAllowed } from './generation-options';

/** Most choices (`n`) one request may ask for: the worker generates them one after another. */
export const MAX_CHOICES = 8;

/**
 * What an engine can honour beyond plain sampling. A worker announces its engine's
 * capabilities; the API refuses at admission, with a 400 naming the field, a request that needs
 * one the serving engines lack, instead of queueing work that would fail or be half-applied.
 */
export interface EngineCapabilities {
  /** Function calling (`tools`, `tool_choice`). */
  tools: boolean;
  /** Output constrained by a grammar (`response_format` json_object / json_schema). */
  grammar: boolean;
  /** Token log probabilities (`logprobs`, `top_logprobs`). */
  logprobs: boolean;
  /** Most choices (`n`) one request may ask for. */
  maxChoices: number;
  /** Token ids `logit_bias` may name (its vocabulary size); 0 when it cannot apply logit_bias. */
  logitBiasTokens: number;
}

export type EngineCapability = keyof EngineCapabilities;

/** What a request needs of an engine, named by the request field that needs it. */
export interface RequiredCapability {
  capability: Exclude<EngineCapability, 'maxChoices' | 'logitBiasTokens'>;
  /** The request field that asks for it, for the 400's `param`. */
  param: string;
}

/** What a job needs of the engine that runs it, each named by the request field that asks for it. */
export function requiredCapabilities(job: Pick<CompletionJobInput, 'tools' | 'responseFormat' | 'logprobs'>): RequiredCapability[] {
  const needs: RequiredCapability[] = [];
  if (callsAllowed(job.tools)) needs.push({ capability: 'tools', param: 'tools' });
  if (job.responseFormat.type !== 'text') needs.push({ capability: 'grammar', param: 'response_format' });
  if (job.logprobs) needs.push({ capability: 'logprobs', param: 'logprobs' });
  return needs;
}

/**
 * Why `logit_bias` cannot apply on an engine whose vocabulary has `logitBiasTokens` tokens: it
 * takes no logit_bias at all, or names the highest token id outside its vocabulary.
 */
export function logitBiasRefusal(bias: SamplingParams['logitBias'], logitBiasTokens: number): { unsupported: true } | { highest: number } | undefined {
  if (!bias || bias.length === 0) return undefined;
  if (logitBiasTokens === 0) return { unsupported: true };
  const highest = Math.max(...bias.map(({ token }) => token));
  return highest >= logitBiasTokens ? { highest } : undefined;
}
