import type { FastifyReply } from 'fastify';
import type { CompletionEnding } from '../../pipeline/completion-runner';
import { BufferedReply } from '../common/buffered-reply';
import type { EmbeddingsFormatter } from './embeddings-formatter';

/** Embeddings are answered whole, once every vector is in (OpenAI's route does not stream). */
export class BufferedEmbeddings extends BufferedReply {
  readonly promptParam = 'input';

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
