import { encodeVector, MAX_CHOICES } from '@app/contracts';
import type { ChatMessage, EmbeddingInput, EngineCapabilities, FinishReason } from '@app/contracts';
import { answerBudget, GenerationAbortedError } from './inference-engine';
import type {
  EmbeddingOutcome,
  EmbeddingRequest,
  GenerationOutcome,
  GenerationRequest,
  InferenceEngine,
  RankOutcome,
  RankRequest,
  TokenizeOutcome,
  TokenizeRequest,
} from './inference-engine';
import { StopSequences } from './stop-sequences';

/**
 * FOR BENCHMARKS ONLY (`ENGINE=synthetic`): an engine that does no inference. It emits a fixed
 * number of word tokens, the first at once and the others `tokenIntervalMs` apart, so that a
 * benchmark measures what the queue, the API and Redis cost around an engine whose speed is known.
 * It honours max_tokens, stop sequences and the abort signal as a real engine does. Never a
 * default, and never what a test calls inference.
 */
export interface SyntheticEngineOptions {
  /** Tokens in a whole answer; the answer then ends with finish_reason `stop`. */
  tokens: number;
  /** Milliseconds between two tokens; 0 yields to the event loop between tokens and no more. */
  tokenIntervalMs: number;
  /** Completions generated at once. */
  slots: number;
  /** Tokens of prompt plus answer that fit in one sequence. */
  contextSize: number;
}

const WORDS = ['the', 'quick', 'brown', 'fox', 'jumps', 'over', 'a', 'lazy', 'dog', 'and', 'runs', 'away'];

/** The i-th token of every synthetic answer: a word with its leading space, as BPE vocabularies have them. */
export function syntheticToken(index: number): string {
  return `${index === 0 ? '' : ' '}${WORDS[index % WORDS.length]}`;
}

/** Words and punctuation marks, roughly what a tokenizer would count; there is no real tokenizer here. */
const countTextTokens = (text: string): number => text.match(/\w+|[^\w\s]/g)?.length ?? 0;

function countPromptTokens(messages: ChatMessage[]): number {
  return messages.reduce((sum, message) => sum + 4 + countTextTokens(message.content), 2);
}

/** Dimensions of a synthetic vector (a MiniLM-sized embedding). */
export const SYNTHETIC_DIMENSIONS = 384;

/** The input's FNV-1a hash, which seeds what the engine makes of it. */
function hashOf(input: EmbeddingInput): number {
  let state = 0x811c9dc5;
  for (const unit of typeof input === 'string' ? Array.from(input, (char) => char.codePointAt(0)!) : input) state = Math.imul(state ^ unit, 0x01000193);
  return state;
}

/** The same vector for the same input every time: a seeded sequence from the input's hash. */
function syntheticVector(input: EmbeddingInput): Float32Array {
  let state = hashOf(input);
  return Float32Array.from({ length: SYNTHETIC_DIMENSIONS }, () => {
    state = Math.imul(state ^ (state >>> 15), 0x2c1b3c6d) >>> 0;
    return state / 2 ** 31 - 1;
  });
}

export class SyntheticEngine implements InferenceEngine {
  readonly name = 'synthetic';
  /** It samples nothing, so it can honour no option beyond max_tokens and stop. */
  readonly capabilities: EngineCapabilities = {
    kinds: ['generate', 'embed', 'rank', 'tokenize'],
    tools: false,
    grammar: false,
    logprobs: false,
    maxChoices: MAX_CHOICES,
    logitBiasTokens: 0,
    unbiasableTokens: [],
  };
  readonly slots: number;
  readonly contextSize: number;

  constructor(private readonly options: SyntheticEngineOptions) {
    this.slots = options.slots;
    this.contextSize = options.contextSize;
  }

  async generate({ messages, sampling, signal, output }: GenerationRequest): Promise<GenerationOutcome> {
    const promptTokens = countPromptTokens(messages);
    const maxTokens = answerBudget(this.contextSize, promptTokens, sampling.maxTokens);
    const limit = Math.min(this.options.tokens, maxTokens);
    const stop = new StopSequences(sampling.stop, (text) => output.write({ type: 'text', choice: 0, text }));
    let generated = 0;
    const startedAt = performance.now();
    const clock = new TokenClock(signal);
    try {
      while (generated < limit) {
        // Token k is due k intervals after the start, so timer lateness does not add up over an answer.
        await clock.until(startedAt + generated * this.options.tokenIntervalMs);
        generated += 1;
        if (!stop.push(syntheticToken(generated - 1))) break;
      }
    } finally {
      clock.stop();
    }
    const text = stop.finish();
    const finishReason: FinishReason = !stop.stopped && limit < this.options.tokens ? 'length' : 'stop';
    return {
      text,
      finishReason,
      usage: { prompt_tokens: promptTokens, completion_tokens: generated, total_tokens: promptTokens + generated },
    };
  }

  /** One vector per input, each a token interval after the one before. */
  async embed({ inputs, signal, output }: EmbeddingRequest): Promise<EmbeddingOutcome> {
    const clock = new TokenClock(signal);
    const startedAt = performance.now();
    try {
      for (const [index, input] of inputs.entries()) {
        await clock.until(startedAt + index * this.options.tokenIntervalMs);
        output.write({ type: 'embedding', index, vector: encodeVector(syntheticVector(input)) });
      }
    } finally {
      clock.stop();
    }
    return { promptTokens: inputs.reduce((sum, input) => sum + (typeof input === 'string' ? countTextTokens(input) : input.length), 0) };
  }

  /** One score per document, each a token interval after the one before: the same for the same pair every time. */
  async rank({ query, documents, signal, output }: RankRequest): Promise<RankOutcome> {
    const clock = new TokenClock(signal);
    const startedAt = performance.now();
    try {
      for (const [index, document] of documents.entries()) {
        await clock.until(startedAt + index * this.options.tokenIntervalMs);
        output.write({ type: 'score', index, score: (hashOf(`${query}\n${document}`) >>> 0) / 2 ** 32 });
      }
    } finally {
      clock.stop();
    }
    return { promptTokens: documents.reduce((sum, document) => sum + countTextTokens(query) + countTextTokens(document), 0) };
  }

  /** A word (or punctuation mark) a token, numbered by its place in WORDS where it is one; there is no real vocabulary. */
  tokenize(request: TokenizeRequest): Promise<TokenizeOutcome> {
    if (request.of === 'tokens') return Promise.resolve({ text: request.tokens.map((token) => syntheticToken(token)).join('') });
    if (request.of === 'conversation')
      return Promise.resolve({ tokens: Array.from({ length: countPromptTokens(request.conversation.messages) }, (_, index) => index % WORDS.length) });
    return Promise.resolve({ tokens: Array.from({ length: countTextTokens(request.text) }, (_, index) => index % WORDS.length) });
  }

  close(): Promise<void> {
    // Nothing was loaded.
    return Promise.resolve();
  }
}

/**
 * An answer's token times: each wait resolves at its due time, or rejects when the answer is
 * aborted. One abort listener serves the whole answer: adding and removing one per token on the
 * job's composite signal (AbortSignal.any) cost about as much as the rest of the engine.
 */
class TokenClock {
  private aborted: boolean;
  private pending: { cancel: () => void; reject: (error: Error) => void } | undefined;
  private readonly onAbort = (): void => {
    this.aborted = true;
    this.pending?.cancel();
    this.pending?.reject(new GenerationAbortedError());
    this.pending = undefined;
  };

  constructor(private readonly signal: AbortSignal) {
    this.aborted = signal.aborted;
    signal.addEventListener('abort', this.onAbort, { once: true });
  }

  /** Resolves at `deadline` (performance.now() time), after a turn of the event loop if it is past. */
  until(deadline: number): Promise<void> {
    if (this.aborted) return Promise.reject(new GenerationAbortedError());
    return new Promise((resolve, reject) => {
      const done = (): void => {
        this.pending = undefined;
        resolve();
      };
      const wait = deadline - performance.now();
      if (wait >= 1) {
        const timer = setTimeout(done, wait);
        this.pending = { cancel: () => clearTimeout(timer), reject };
      } else {
        const immediate = setImmediate(done);
        this.pending = { cancel: () => clearImmediate(immediate), reject };
      }
    });
  }

  stop(): void {
    this.signal.removeEventListener('abort', this.onAbort);
  }
}
