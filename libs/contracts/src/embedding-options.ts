/** One input to embed: text, or token ids as the client sent them (OpenAI accepts both). */
export type EmbeddingInput = string | number[];

/** What an `embed` job asks of its engine: one vector per input, in order. */
export interface EmbeddingOptions {
  inputs: EmbeddingInput[];
}

/** Most inputs one embeddings request may hold (OpenAI's bound). */
export const MAX_EMBEDDING_INPUTS = 2048;

/**
 * A vector as it travels in an event and a stored answer: little-endian float32, base64 (a
 * quarter of the JSON numbers' size, and what OpenAI's `encoding_format: "base64"` answers).
 */
export function encodeVector(vector: ArrayLike<number>): string {
  const floats = Float32Array.from(vector);
  return Buffer.from(floats.buffer, floats.byteOffset, floats.byteLength).toString('base64');
}

/** The floats of a vector `encodeVector` wrote. */
export function decodeVector(encoded: string): Float32Array {
  const bytes = Buffer.from(encoded, 'base64');
  const floats = new Float32Array(bytes.byteLength / 4);
  new Uint8Array(floats.buffer).set(bytes);
  return floats;
}
