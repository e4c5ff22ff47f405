import type { FastifyReply } from 'fastify';
import type { CompletionEnding } from '../../pipeline/completion-runner';
import { BufferedReply } from '../common/buffered-reply';
import type { EmbeddingsFormatter } from './embeddings-formatter';

/** The door's name for what it embeds: a failure about it names it. */
export const PROMPT_PARAM = 'input';

/** Embeddings are answered whole, once every vector is in (OpenAI's route does not stream). */
export class BufferedEmbeddings extends BufferedReply {
  readonly promptParam = PROMPT_PARAM;

  constructor(
    private readonly reply: FastifyReply,
    private readonly formatter: EmbeddingsFormatter,
  ) {
    super();
  }

  async finish(ending: CompletionEnding): Promise<void> {
    await this.reply.send(this.formatter.body(this.parts, ending.usage));
  }
}
