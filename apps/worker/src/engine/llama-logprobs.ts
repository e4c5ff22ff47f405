import type { TokenLogprob, TopLogprob } from '@app/contracts';
import type { ControlledEvaluateInputItem, LlamaContextSequence, LlamaModel, Token } from 'node-llama-cpp' with { 'resolution-mode': 'import' };
import { commonPrefixLength } from './llama-prompt-cache';
import { vocabularyBytes } from './llama-token-bytes';

const REPLACEMENT_CHARACTER = '\uFFFD';
/** Tokens before one that its text is read with. */
const TOKEN_TRAIL = 8;

/**
 * Log probabilities of an answer that was just generated on `sequence`, from the model's raw
 * logits: `log softmax(logits)`, before temperature, top_p and logit_bias (as vLLM reports them
 * by default). LlamaChat does not expose probabilities while it samples, so the answer is scored
 * afterwards in one batched pass: the prompt stays in the sequence's cache and only the answer
 * (plus the prompt's last token, whose logits predict the first answer token) is evaluated again.
 */
export async function scoreAnswer(
  sequence: LlamaContextSequence,
  model: LlamaModel,
  promptTokens: readonly Token[],
  answer: readonly Token[],
  top: number,
): Promise<TokenLogprob[]> {
  if (answer.length === 0 || promptTokens.length === 0) return [];
  // Position i of `input` predicts answer[i - firstScored].
  const input = [...promptTokens, ...answer.slice(0, -1)];
  const firstScored = promptTokens.length - 1;
  const start = Math.min(commonPrefixLength(sequence.contextTokens, input), firstScored);
  await sequence.eraseContextTokenRanges([{ start, end: sequence.nextTokenIndex }]);
  const items = input.slice(start).map((token, offset): ControlledEvaluateInputItem => {
    const index = start + offset;
    if (index < firstScored) return token;
    const selected = answer[index - firstScored];
    // The most likely token comes as the first of the top ones: node-llama-cpp's own `includeMax`
    // answers under the wrong token id when the selected token is asked for too (3.22.1), which
    // read every score of `top_logprobs: 0` as the most likely token's.
    return [token, { generateNext: { totalLogitWeight: true, logits: { filter: { tokens: [selected], includeTop: Math.max(top, 1) } } } }];
  });
  const outputs = await sequence.controlledEvaluate(items);

  const bytesOf = vocabularyBytes(model);
  const scored: TokenLogprob[] = [];
  for (let offset = 0; offset < items.length; offset++) {
    const index = start + offset;
    if (index < firstScored) continue;
    const position = index - firstScored;
    const next = outputs[offset]?.next;
    if (next?.logits === undefined || next.totalLogitWeight === undefined) throw new Error(`no logits for answer token ${position}`);
    const logits = next.logits;
    // totalLogitWeight is Σ exp(logit − max), so log p(t) = logit(t) − max − ln(totalLogitWeight).
    const normaliser = Math.max(...logits.values()) + Math.log(next.totalLogitWeight);
    // detokenize reads only the last few tokens before one (for a leading space and the like),
    // the prompt's last ones before the first answer tokens, as LlamaChat reads the answer's text.
    const earlier =
      position >= TOKEN_TRAIL ? answer.slice(position - TOKEN_TRAIL, position) : [...promptTokens.slice(position - TOKEN_TRAIL), ...answer.slice(0, position)];
    const describe = (token: Token): TopLogprob => {
      const text = model.detokenize([token], false, earlier);
      const logprob = (logits.get(token) ?? -Infinity) - normaliser;
      // A token holding part of a character reads U+FFFD, or nothing at all after the character's
      // first byte; its own bytes are what let a client join them.
      const partial = (text === '' || text.includes(REPLACEMENT_CHARACTER)) && !model.isSpecialToken(token);
      const bytes = (partial ? bytesOf(token) : undefined) ?? [...Buffer.from(text, 'utf8')];
      // OpenAI reports -9999 for a token the model all but rules out; JSON has no -Infinity.
      return { token: text, logprob: Number.isFinite(logprob) ? Math.min(0, logprob) : -9999, bytes };
    };
    const ranked = [...logits.keys()].sort((a, b) => (logits.get(b) ?? 0) - (logits.get(a) ?? 0)).slice(0, top);
    scored.push({ ...describe(answer[position]), top_logprobs: ranked.map(describe) });
  }
  return scored;
}

/**
 * The answer's tokens as LlamaChat hands them on, each batch with the text it spelled (its
 * onToken and onTextChunk come in pairs): where a stop sequence cut the text, the tokens are cut
 * at the same place, whatever their own bytes read (a first token's leading space, invalid UTF-8).
 */
export class AnswerTokens {
  readonly tokens: Token[] = [];
  /** After each batch: the tokens so far, and the characters of text they spelled. */
  private readonly spelled: Array<{ tokens: number; length: number }> = [];
  private length = 0;

  onToken(tokens: Token[]): void {
    this.tokens.push(...tokens);
  }

  onText(text: string): void {
    this.length += text.length;
    this.spelled.push({ tokens: this.tokens.length, length: this.length });
  }

  /**
   * The first `length` characters of the answer in the pieces LlamaChat handed them on in, each
   * with the tokens that spelled it (`tokens` [from, to)), for streaming text with its log
   * probabilities. A piece straddling `length` keeps its text and loses its tokens (as `within`);
   * the first `tokenCount` tokens are covered: those that spelled no text go with the next piece
   * that has some, or the last.
   */
  pieces(length: number, tokenCount: number): Array<{ text: [number, number]; tokens: [number, number] }> {
    const pieces: Array<{ text: [number, number]; tokens: [number, number] }> = [];
    let spelled = 0;
    let covered = 0;
    for (const batch of this.spelled) {
      if (spelled >= length) break;
      if (batch.length === spelled) continue; // spelled nothing (part of a character): its tokens go with the next text
      const to = batch.length <= length ? Math.min(batch.tokens, tokenCount) : covered;
      pieces.push({ text: [spelled, Math.min(batch.length, length)], tokens: [covered, to] });
      spelled = batch.length;
      covered = to;
    }
    const last = pieces.at(-1);
    if (covered < tokenCount) {
      if (last) last.tokens[1] = tokenCount;
      else pieces.push({ text: [0, 0], tokens: [0, tokenCount] });
    }
    return pieces;
  }

  /** How many tokens spelled nothing past the first `length` characters: one straddling that point is left out. */
  within(length: number): number {
    let count = 0;
    for (const batch of this.spelled) {
      if (batch.length > length) break;
      count = batch.tokens;
    }
    return count;
  }
}
