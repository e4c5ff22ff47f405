import type { EngineCapabilities, SamplingParams } from '@app/contracts';
import type { LLamaChatGenerateResponseOptions, LlamaModel, Token, TokenBias } from 'node-llama-cpp' with { 'resolution-mode': 'import' };

// OpenAI's sampling parameters in node-llama-cpp's terms, where the two disagree on defaults or units.

/** OpenAI applies no repetition penalty unless asked; node-llama-cpp applies one by default. */
export function repeatPenalty(sampling: SamplingParams, maxTokens: number): LLamaChatGenerateResponseOptions['repeatPenalty'] {
  if (sampling.frequencyPenalty === 0 && sampling.presencePenalty === 0) return false;
  return {
    penalty: 1,
    frequencyPenalty: sampling.frequencyPenalty,
    presencePenalty: sampling.presencePenalty,
    lastTokens: maxTokens,
    penalizeNewLine: true,
  };
}

/**
 * A job's sampling in the options node-llama-cpp's LlamaChat and LlamaCompletion share: the
 * whole distribution (node-llama-cpp would otherwise keep the top 40), the seed, penalties and bias.
 */
export function samplingOptions(sampling: SamplingParams, maxTokens: number, bias: TokenBias | undefined) {
  return {
    maxTokens,
    temperature: sampling.temperature,
    topP: sampling.topP,
    topK: 0,
    seed: sampling.seed,
    repeatPenalty: repeatPenalty(sampling, maxTokens),
    ...(bias ? { tokenBias: bias } : {}),
  };
}

/** A request's logit_bias as node-llama-cpp's TokenBias. */
export type LogitBias = (biases: Array<{ token: number; bias: number }>) => TokenBias;

/**
 * OpenAI adds logit_bias to the logits, and -100 bans the token. (node-llama-cpp's TokenBias
 * skips end-of-generation tokens without a word: the capabilities announce them as unbiasable.)
 * `TokenBiasClass` is node-llama-cpp's, which loads only by dynamic import.
 */
export function logitBias(TokenBiasClass: typeof TokenBias, model: LlamaModel): LogitBias {
  return (biases) => {
    const bias = new TokenBiasClass(model.tokenizer);
    for (const { token, bias: logit } of biases) bias.set(token as Token, logit <= -100 ? 'never' : { logit });
    return bias;
  };
}

/** Tokens in the model's vocabulary, as its GGUF lists them: the ids logit_bias may name. */
export function vocabularySize(model: LlamaModel): number {
  const tokens: unknown = model.fileInfo.metadata.tokenizer?.ggml?.tokens;
  return Array.isArray(tokens) ? tokens.length : 0;
}

/** The vocabulary's end-of-generation tokens: node-llama-cpp's TokenBias skips a bias on any of them. */
export function endOfGenerationTokens(model: LlamaModel): number[] {
  return [...model.iterateAllTokens()].filter((token) => model.isEogToken(token));
}

/** A model that only embeds (or ranks) honours no generation option; its vocabulary still bounds the token ids it embeds. */
export function noGenerationCapabilities(model: LlamaModel): Omit<EngineCapabilities, 'kinds'> {
  return {
    tools: false,
    grammar: false,
    logprobs: false,
    maxChoices: 1,
    logitBiasTokens: vocabularySize(model),
    unbiasableTokens: endOfGenerationTokens(model),
  };
}
