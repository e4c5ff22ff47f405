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
