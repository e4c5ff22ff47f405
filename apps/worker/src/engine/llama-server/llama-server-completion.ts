import type { LogprobsOptions, SamplingParams, TokenLogprob } from '@app/contracts';
import { readServerSentEvents } from '../upstream/server-sent-events';

/** What the worker sends llama-server's native `/completion`: the prompt as token ids, and how to sample. */
export interface CompletionBody {
  prompt: number[];
  /** Whether the slot's prompt from earlier requests is reused (PROMPT_CACHE). */
  cache_prompt: boolean;
  n_predict: number;
  grammar?: string;
  n_probs?: number;
  stop: string[];
}

/** One token's numbers as llama-server streams them with `n_probs` (log probabilities, not post-sampling). */
interface ServerTokenProbability {
  id: number;
  token: string;
  bytes: number[];
  logprob: number;
  top_logprobs?: Array<{ id: number; token: string; bytes: number[]; logprob: number }>;
}

/** A streamed `/completion` chunk: its text, and on the last one how it ended. */
export interface CompletionChunk {
  content: string;
  stop: boolean;
  completion_probabilities?: ServerTokenProbability[];
  stop_type?: 'none' | 'eos' | 'limit' | 'word';
  tokens_predicted?: number;
  tokens_evaluated?: number;
  timings?: { cache_n?: number };
}

/**
 * OpenAI's sampling in llama-server's fields, with every sampler OpenAI does not have turned off
 * (llama-server keeps the top 40 and applies min_p 0.05 by default): the whole distribution, then
 * temperature and top_p, penalties only when asked, the seed.
 */
export function samplingFields(sampling: SamplingParams) {
  return {
    temperature: sampling.temperature,
    top_p: sampling.topP,
    top_k: 0,
    min_p: 0,
    typical_p: 1,
    repeat_penalty: 1,
    frequency_penalty: sampling.frequencyPenalty,
    presence_penalty: sampling.presencePenalty,
    seed: sampling.seed,
    // OpenAI's -100 bans the token: llama-server's `false` does.
    ...(sampling.logitBias?.length ? { logit_bias: sampling.logitBias.map(({ token, bias }) => [token, bias <= -100 ? false : bias]) } : {}),
  };
}

/**
 * What to ask llama-server for a request's logprobs: it sends a token's own number only beside at
 * least one alternative, so `top_logprobs: 0` asks for one (dropped in toTokenLogprobs).
 */
export function probabilityFields(logprobs: LogprobsOptions | undefined): { n_probs?: number } {
  return logprobs ? { n_probs: Math.max(1, logprobs.top) } : {};
}

/** llama-server's token numbers in OpenAI's shape, with the `top` alternatives asked for. */
export function toTokenLogprobs(probabilities: ServerTokenProbability[], top: number): TokenLogprob[] {
  return probabilities.map((probability) => ({
    token: probability.token,
    logprob: probability.logprob,
    bytes: probability.bytes,
    top_logprobs: (probability.top_logprobs ?? []).slice(0, top).map(({ token, logprob, bytes }) => ({ token, logprob, bytes })),
  }));
}

/** llama-server refused or failed a request; `status` is its HTTP status. */
export class LlamaServerError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
    this.name = 'LlamaServerError';
  }
}

/**
 * Streams one `/completion` from llama-server, chunk by chunk. Aborting `signal` closes the
 * request, which frees the slot on the server at its next token.
 */
export async function* streamCompletion(url: string, body: object, signal: AbortSignal): AsyncGenerator<CompletionChunk> {
  const response = await fetch(`${url}/completion`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ ...body, stream: true }),
    signal,
  });
  if (!response.ok || !response.body) {
    const text = await response.text().catch(() => '');
    throw new LlamaServerError(`llama-server answered ${response.status}: ${serverMessage(text)}`, response.status);
  }
  for await (const event of readServerSentEvents(response.body)) {
    if (event.event === 'error') throw new LlamaServerError(`llama-server failed the completion: ${serverMessage(event.data)}`, 500);
    const chunk = JSON.parse(event.data) as CompletionChunk | { error: unknown };
    if ('error' in chunk) throw new LlamaServerError(`llama-server failed the completion: ${serverMessage(event.data)}`, 500);
    yield chunk;
    if (chunk.stop) return;
  }
  throw new LlamaServerError('llama-server ended the stream before the completion did', 502);
}

/** The message of llama-server's `{"error": {"message"}}`, else the text as it came. */
function serverMessage(text: string): string {
  try {
    const parsed = JSON.parse(text) as { error?: { message?: string } | string };
    const message = typeof parsed.error === 'string' ? parsed.error : parsed.error?.message;
    if (message) return message;
  } catch {
    // not JSON
  }
  return text.slice(0, 500);
}
