import type { FinishReason, PlainPrompt, PromptInput } from '@app/contracts';
import type { LlamaCompletion, LlamaCompletionGenerationOptions, LlamaContextSequence, LlamaModel, Token } from 'node-llama-cpp' with {
  'resolution-mode': 'import',
};
import { answerBudget, GenerationAbortedError, UnsupportedOptionError } from './inference-engine';
import type { GenerationOutcome, GenerationRequest, TokenizeOutcome, TokenizeRequest } from './inference-engine';
import { answerOutgrewContext, isContextOverflow } from './llama-context-overflow';
import { AnswerTokens, scoreAnswer } from './llama-logprobs';
import { samplingOptions } from './llama-sampling';
import type { LogitBias } from './llama-sampling';
import { WHOLE_CONVERSATION } from './llama-sequences';
import type { LlamaSequences } from './llama-sequences';
import { StopSequences } from './stop-sequences';

/** The start token the model puts before every input (node-llama-cpp's LlamaCompletion puts it there too), if any. */
export function startToken(model: LlamaModel): Token | undefined {
  const { bos } = model.tokens;
  return bos !== null && model.tokens.shouldPrependBosToken ? bos : undefined;
}

/**
 * Text as the model's tokenizer reads a prompt: with `specialTokens`, special tokens' text read as
 * those tokens and the start token the model adds first (vLLM's `add_special_tokens`).
 */
export function textTokens(model: LlamaModel, text: string, specialTokens: boolean): Token[] {
  return specialTokens ? withStart(model, spelledTokens(model, text)) : model.tokenize(text, false);
}

/**
 * A `tokenize` job on the model's own tokenizer: ids to text, text to ids, and a conversation as
 * the engine's chat template renders it (`render`), which a model that does not generate lacks.
 */
export function vocabularyTokens(
  model: LlamaModel,
  request: TokenizeRequest,
  engine: string,
  render: ((conversation: (TokenizeRequest & { of: 'conversation' })['conversation']) => Token[]) | undefined,
): TokenizeOutcome {
  if (request.of === 'tokens') return { text: model.detokenize(request.tokens as Token[], true) };
  if (request.of === 'conversation') {
    if (!render) throw new UnsupportedOptionError(engine, 'messages', 'a conversation: this model does not generate, and has no chat template to render it');
    return { tokens: render(request.conversation) };
  }
  return { tokens: textTokens(model, request.text, request.specialTokens) };
}

/** A prompt's own tokens: text with the model's special tokens, or the ids as sent, without the model's start token. */
function spelledTokens(model: LlamaModel, input: PromptInput): Token[] {
  const tokens = typeof input === 'string' ? model.tokenize(input, true) : (input as Token[]);
  const start = startToken(model);
  return start !== undefined && tokens[0] === start ? tokens.slice(1) : tokens;
}

/** What is evaluated: the tokens after the start token the model puts first (LlamaCompletion puts it there whatever it is given). */
function withStart(model: LlamaModel, tokens: Token[]): Token[] {
  const start = startToken(model);
  return start === undefined ? tokens : [start, ...tokens];
}

/** A plain prompt as the model evaluates it: its own tokens, and the whole prompt (the start token, or its FIM layout around a suffix). */
export interface PlainPromptTokens {
  /** The prompt's own tokens, without the model's start token. */
  spelled: Token[];
  /** The suffix's tokens, when the model fills in the middle. */
  suffixTokens?: Token[];
  /** What is evaluated. */
  prompt: Token[];
  /** The prompt's text, as `echo` gives it back. */
  echoed: string;
}

/** The first of a plain prompt's inputs as either engine evaluates it (an engine takes one input at a time). */
export function plainPromptTokens(model: LlamaModel, { inputs, suffix }: PlainPrompt): PlainPromptTokens {
  const [input] = inputs;
  // The prompt's own tokens; the start token the model puts first is no part of its text, nor of its echo.
  const spelled = spelledTokens(model, input);
  const suffixTokens = suffix === undefined ? undefined : model.tokenize(suffix, true);
  const prompt = suffixTokens ? infillTokens(model, spelled, suffixTokens) : withStart(model, spelled);
  const echoed = typeof input === 'string' ? input : model.detokenize(spelled, true);
  return { spelled, ...(suffixTokens ? { suffixTokens } : {}), prompt, echoed };
}

/** A fill-in-the-middle prompt as LlamaCompletion lays it out: prefix, suffix, middle (or suffix before prefix without a middle token). */
function infillTokens(model: LlamaModel, prefix: Token[], suffix: Token[]): Token[] {
  const { prefix: pre, suffix: suf, middle } = model.tokens.infill;
  if (pre === null || suf === null) throw new Error('this model has no fill-in-the-middle tokens');
  return withStart(model, middle === null ? [suf, ...suffix, pre, ...prefix] : [pre, ...prefix, suf, ...suffix, middle]);
}

/**
 * Plain prompts (`POST /v1/completions`) on the chat generator's sequences: node-llama-cpp's
 * LlamaCompletion, no chat template. The prompt's tokens are counted, and must fit with the
 * answer, before anything is evaluated (LlamaCompletion would cut a long prompt's start to fit).
 * With `echo` the answer begins with the prompt; with `logprobs` too, with the prompt's tokens'
 * log probabilities, scored in the same pass as the answer's.
 */
export class LlamaPromptCompleter {
  private readonly completions = new WeakMap<LlamaContextSequence, LlamaCompletion>();

  constructor(
    private readonly model: LlamaModel,
    private readonly sequences: LlamaSequences,
    private readonly tokenBias: LogitBias,
    private readonly contextSize: number,
    private readonly newCompletion: (sequence: LlamaContextSequence) => LlamaCompletion,
  ) {}

  async complete(request: GenerationRequest): Promise<GenerationOutcome> {
    const { sampling, logprobs, signal, output, anotherChoiceFollows } = request;
    const { echo } = request.prompt!;
    const { spelled, suffixTokens, prompt, echoed } = plainPromptTokens(this.model, request.prompt!);
    // LlamaCompletion's infill wants a token free beyond the answer.
    const maxTokens = answerBudget(this.contextSize, prompt.length, sampling.maxTokens, suffixTokens ? 2 : 1);
    const stopped = new AbortController();
    const stop = new StopSequences(sampling.stop, logprobs ? () => undefined : (text) => output.write({ type: 'text', choice: 0, text }));
    if (echo && !logprobs) output.write({ type: 'text', choice: 0, text: echoed });
    const answerTokens = new AnswerTokens();
    const bias = sampling.logitBias?.length ? this.tokenBias(sampling.logitBias) : undefined;
    const { chats, cachedTokens } = this.sequences.take(prompt);
    const { sequence } = chats.free;
    let failed = false;
    try {
      // max_tokens 0 (an evaluation harness scoring an echoed prompt): nothing is generated.
      // LlamaCompletion puts the model's start token (and its FIM tokens) around what it is given itself.
      const completion = this.completionOf(sequence);
      const generate = (options: LlamaCompletionGenerationOptions) =>
        suffixTokens ? completion.generateInfillCompletionWithMeta(spelled, suffixTokens, options) : completion.generateCompletionWithMeta(spelled, options);
      const generation =
        maxTokens === 0
          ? undefined
          : generate({
              signal: AbortSignal.any([signal, stopped.signal]),
              stopOnAbortSignal: true,
              ...samplingOptions(sampling, maxTokens, bias),
              // The prompt was measured to fit: nothing of it is dropped, and the answer ends at the context's end.
              disableContextShift: true,
              contextShiftSize: 1,
              onToken: (tokens) => answerTokens.onToken(tokens),
              onTextChunk: (text) => {
                answerTokens.onText(text);
                if (!signal.aborted && !stop.push(text)) stopped.abort();
              },
            });
      const response = await generation;
      if (signal.aborted) throw new GenerationAbortedError();
      const text = stop.finish();
      const completionTokens = answerTokens.tokens.length;
      if (logprobs) await this.writeScored(sequence, prompt, echo ? echoed : undefined, text, answerTokens, stop.stopped, request);
      const finishReason: FinishReason = !stop.stopped && (response === undefined || response.metadata.stopReason === 'maxTokens') ? 'length' : 'stop';
      return {
        text: echo ? echoed + text : text,
        finishReason,
        usage: {
          prompt_tokens: prompt.length,
          completion_tokens: completionTokens,
          total_tokens: prompt.length + completionTokens,
          prompt_tokens_details: { cached_tokens: cachedTokens },
        },
      };
    } catch (error) {
      failed = true;
      if (signal.aborted) throw new GenerationAbortedError();
      if (isContextOverflow(error)) throw answerOutgrewContext(this.contextSize, prompt.length);
      throw error;
    } finally {
      const keep = anotherChoiceFollows === true && !failed ? 'whole prompt' : WHOLE_CONVERSATION;
      await this.sequences.giveBack(chats, { messages: [], history: [], functions: undefined, prompt }, keep);
    }
  }

  private completionOf(sequence: LlamaContextSequence): LlamaCompletion {
    let completion = this.completions.get(sequence);
    if (!completion) {
      completion = this.newCompletion(sequence);
      this.completions.set(sequence, completion);
    }
    return completion;
  }

  /**
   * The text with its tokens' log probabilities, piece by piece: an echoed prompt first, then the
   * answer; one scoring pass evaluates both. The prompt's first token is scored after the model's
   * start token; without one, nothing predicts it (OpenAI answers it with a null).
   */
  private async writeScored(
    sequence: LlamaContextSequence,
    prompt: Token[],
    echoed: string | undefined,
    text: string,
    answerTokens: AnswerTokens,
    stopped: boolean,
    { logprobs, signal, output }: GenerationRequest,
  ): Promise<void> {
    const top = logprobs!.top;
    const scoredPrompt = echoed !== undefined ? prompt.slice(1) : [];
    const from = echoed !== undefined ? prompt.slice(0, 1) : prompt;
    const scored = await scoreAnswer(sequence, this.model, from, [...scoredPrompt, ...answerTokens.tokens], top);
    if (signal.aborted) throw new GenerationAbortedError();
    if (echoed !== undefined) {
      output.write({ type: 'text', choice: 0, text: echoed });
      const promptScores = scored.slice(0, scoredPrompt.length);
      if (prompt[0] === startToken(this.model)) {
        output.write({ type: 'logprobs', choice: 0, content: promptScores });
      } else {
        const firstText = this.model.detokenize(prompt.slice(0, 1), true);
        const unscored = { token: firstText, bytes: [...Buffer.from(firstText, 'utf8')] };
        output.write({ type: 'logprobs', choice: 0, content: promptScores, unscored });
      }
    }
    const answer = scored.slice(scoredPrompt.length);
    const kept = stopped ? answerTokens.within(text.length) : answer.length;
    for (const {
      text: [start, end],
      tokens: [first, last],
    } of answerTokens.pieces(text.length, kept)) {
      output.write({ type: 'text', choice: 0, text: text.slice(start, end) });
      if (last > first) output.write({ type: 'logprobs', choice: 0, content: answer.slice(first, last) });
    }
  }
}
