import { decodeVector, encodeVector } from '@app/contracts';
import type { CompletionUsage, OutputPart } from '@app/contracts';
import type { CreateEmbeddingResponse, Embedding } from 'openai/resources/embeddings';
import { OpenAiError } from '../../errors/openai-error';

/** The vector scaled to unit length, as OpenAI's embeddings are (a zero vector stays as it is). */
export function normalized(vector: Float32Array): Float32Array {
  const norm = Math.sqrt(vector.reduce((sum, value) => sum + value * value, 0));
  return norm === 0 ? vector : vector.map((value) => value / norm);
}

/** OpenAI's answer; with `encoding_format: "base64"` each embedding is a string (its type says only floats). */
export type EmbeddingsBody = Omit<CreateEmbeddingResponse, 'data'> & { data: Array<Omit<Embedding, 'embedding'> & { embedding: number[] | string }> };

/** Turns an `embed` job's parts into OpenAI's embeddings list, vectors in input order. */
export class EmbeddingsFormatter {
  constructor(
    private readonly model: string,
    private readonly inputCount: number,
    private readonly encoding: 'float' | 'base64',
    private readonly normalize: boolean,
  ) {}

  /** The whole answer; a vector missing or twice is the worker's fault, never a shorter list. */
  body(parts: OutputPart[], usage: CompletionUsage): EmbeddingsBody {
    const vectors = new Array<Float32Array | undefined>(this.inputCount);
    for (const part of parts) {
      if (part.type !== 'embedding') continue;
      if (part.index >= this.inputCount || vectors[part.index]) throw OpenAiError.internal(`The worker sent a second vector for input ${part.index}.`);
      const vector = decodeVector(part.vector);
      vectors[part.index] = this.normalize ? normalized(vector) : vector;
    }
    const missing = vectors.findIndex((vector) => vector === undefined);
    if (missing >= 0) throw OpenAiError.internal(`The worker sent no vector for input ${missing}.`);
    return {
      object: 'list',
      data: (vectors as Float32Array[]).map((vector, index) => ({
        object: 'embedding',
        index,
        // base64 is little-endian float32, which the openai package decodes (and asks for by default).
        embedding: this.encoding === 'base64' ? encodeVector(vector) : Array.from(vector),
      })),
      model: this.model,
      usage: { prompt_tokens: usage.prompt_tokens, total_tokens: usage.prompt_tokens },
    };
  }
}
