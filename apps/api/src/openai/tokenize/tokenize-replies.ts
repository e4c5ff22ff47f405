import type { FastifyReply } from 'fastify';
import { OpenAiError } from '../../errors/openai-error';
import type { CompletionEnding } from '../../pipeline/completion-runner';
import { BufferedReply } from '../common/buffered-reply';

/** What a failure about the input names. */
export const PROMPT_PARAM = 'prompt';

/** vLLM's answers: `{count, max_model_len, tokens}` for `/tokenize`, `{prompt}` for `/detokenize`. */
export class BufferedTokenization extends BufferedReply {
  readonly promptParam = PROMPT_PARAM;

  constructor(
    private readonly reply: FastifyReply,
    /** The serving worker's context, vLLM's `max_model_len`. */
    private readonly maxModelLength: number,
  ) {
    super();
  }

  async finish(ending: CompletionEnding): Promise<void> {
    const tokens = this.parts.find((part) => part.type === 'tokens');
    if (tokens) {
      await this.reply.send({ count: tokens.tokens.length, max_model_len: this.maxModelLength, tokens: tokens.tokens });
      return;
    }
    const text = this.parts.flatMap((part) => (part.type === 'text' ? [part.text] : []));
    if (text.length === 0 && ending.usage.prompt_tokens > 0) throw OpenAiError.internal('The worker sent no text for the tokens.');
    await this.reply.send({ prompt: text.join('') });
  }
}
