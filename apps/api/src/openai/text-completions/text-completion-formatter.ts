import type { CompletionUsage, FinishReason, LogprobsPart, OutputPart, TokenLogprob } from '@app/contracts';
import type { CompletionChoice, Completion } from 'openai/resources/completions';

/** OpenAI's legacy log probabilities of a choice's tokens: `null` for an echoed prompt's first token, which nothing predicts. */
export interface LegacyLogprobs {
  tokens: string[];
  token_logprobs: Array<number | null>;
  top_logprobs: Array<Record<string, number> | null>;
  text_offset: number[];
}

/** One choice's log probabilities as they accumulate, with where its next token starts in its text. */
class ChoiceLogprobs implements LegacyLogprobs {
  readonly tokens: string[] = [];
  readonly token_logprobs: Array<number | null> = [];
  readonly top_logprobs: Array<Record<string, number> | null> = [];
  readonly text_offset: number[] = [];
  private offset = 0;

  add(part: LogprobsPart): LegacyLogprobs {
    const added = new ChoiceLogprobs();
    added.offset = this.offset;
    if (part.unscored) added.push(part.unscored.token, null, null);
    // The sampled token is always among the alternatives, as OpenAI's are (up to logprobs + 1).
    for (const token of part.content) added.push(token.token, token.logprob, alternatives(token));
    this.tokens.push(...added.tokens);
    this.token_logprobs.push(...added.token_logprobs);
    this.top_logprobs.push(...added.top_logprobs);
    this.text_offset.push(...added.text_offset);
    this.offset = added.offset;
    return added.toJSON();
  }

  toJSON(): LegacyLogprobs {
    return { tokens: this.tokens, token_logprobs: this.token_logprobs, top_logprobs: this.top_logprobs, text_offset: this.text_offset };
  }

  private push(token: string, logprob: number | null, top: Record<string, number> | null): void {
    this.tokens.push(token);
    this.token_logprobs.push(logprob);
    this.top_logprobs.push(top);
    this.text_offset.push(this.offset);
    this.offset += token.length;
  }
}

function alternatives(token: TokenLogprob): Record<string, number> {
  const top: Record<string, number> = {};
  for (const alternative of token.top_logprobs) top[alternative.token] ??= alternative.logprob;
  top[token.token] ??= token.logprob;
  return top;
}

/** A legacy completion or chunk as this door sends it: `logprobs` in OpenAI's legacy shape, null without. */
type LegacyChoice = Omit<CompletionChoice, 'logprobs' | 'finish_reason'> & { logprobs: LegacyLogprobs | null; finish_reason: FinishReason | null };
export type TextCompletionBody = Omit<Completion, 'choices'> & { choices: LegacyChoice[] };

/**
 * Turns a plain-prompt job's parts into OpenAI's `text_completion` objects: the whole answer, or
 * the chunks of a stream (the same shape, as OpenAI's legacy stream has it). `text_offset` counts
 * characters of the choice's own text (the echoed prompt first, if any).
 */
export class TextCompletionFormatter {
  private readonly logprobs = new Map<number, ChoiceLogprobs>();

  constructor(
    private readonly id: string,
    private readonly model: string,
    private readonly created: number,
    readonly withLogprobs: boolean,
    readonly includeUsage: boolean,
  ) {}

  /** The whole answer: every choice's text, log probabilities and finish reason (a single choice ends as the job did). */
  completion(parts: OutputPart[], choiceCount: number, ending: { finishReason: FinishReason; usage: CompletionUsage }): TextCompletionBody {
    const choices = Array.from({ length: choiceCount }, (_, index): LegacyChoice => ({ index, text: '', logprobs: null, finish_reason: ending.finishReason }));
    for (const part of parts) {
      if (part.type === 'text') choices[part.choice].text += part.text;
      else if (part.type === 'logprobs') this.logprobsOf(part);
      else if (part.type === 'choice_end') choices[part.choice].finish_reason = part.finishReason;
    }
    if (this.withLogprobs) for (const choice of choices) choice.logprobs = this.logprobs.get(choice.index)?.toJSON() ?? new ChoiceLogprobs().toJSON();
    return { ...this.envelope(choices), usage: usageOf(ending.usage) };
  }

  /** A stream's chunk of one choice's text, with its tokens' log probabilities when asked for. */
  textChunk(choice: number, text: string, logprobs?: LogprobsPart): string {
    const scored = this.withLogprobs ? (logprobs ? this.logprobsOf(logprobs) : new ChoiceLogprobs().toJSON()) : null;
    return JSON.stringify(this.envelope([{ index: choice, text, logprobs: scored, finish_reason: null }]));
  }

  finishChunk(choice: number, finishReason: FinishReason): string {
    return JSON.stringify(this.envelope([{ index: choice, text: '', logprobs: null, finish_reason: finishReason }]));
  }

  /** `stream_options.include_usage`: a last chunk with no choices and the usage. */
  usageChunk(usage: CompletionUsage): string {
    return JSON.stringify({ ...this.envelope([]), usage: usageOf(usage) });
  }

  /** Adds the part to its choice's log probabilities, and gives back those of the part alone. */
  private logprobsOf(part: LogprobsPart): LegacyLogprobs {
    let choice = this.logprobs.get(part.choice);
    if (!choice) this.logprobs.set(part.choice, (choice = new ChoiceLogprobs()));
    return choice.add(part);
  }

  private envelope(choices: LegacyChoice[]): Omit<TextCompletionBody, 'usage'> {
    return { id: this.id, object: 'text_completion', created: this.created, model: this.model, choices };
  }
}

const usageOf = ({ prompt_tokens, completion_tokens, total_tokens }: CompletionUsage) => ({ prompt_tokens, completion_tokens, total_tokens });
