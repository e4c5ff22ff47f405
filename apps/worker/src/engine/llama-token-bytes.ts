import type { LlamaModel, Token } from 'node-llama-cpp' with { 'resolution-mode': 'import' };

/** GPT-2's byte-level BPE writes every byte as a printable character; this reads them back. */
const GPT2_CHAR_TO_BYTE: ReadonlyMap<string, number> = (() => {
  const printable = (byte: number): boolean => (byte >= 0x21 && byte <= 0x7e) || (byte >= 0xa1 && byte <= 0xac) || (byte >= 0xae && byte <= 0xff);
  const map = new Map<string, number>();
  let shifted = 0;
  for (let byte = 0; byte < 256; byte++) map.set(String.fromCodePoint(printable(byte) ? byte : 256 + shifted++), byte);
  return map;
})();

const BYTE_TOKEN = /^<0x([0-9A-Fa-f]{2})>$/;

/**
 * The bytes a token stands for, read from the model's vocabulary: undefined where the vocabulary
 * does not say (a special token, a tokenizer of another kind). Needed for a token that holds only
 * part of a UTF-8 character, whose text alone reads U+FFFD: SentencePiece's byte tokens
 * (`<0xE2>`) and byte-level BPE pieces (Llama 3, Qwen, GPT-2).
 */
export function vocabularyBytes(model: LlamaModel): (token: Token) => number[] | undefined {
  const tokenizer = model.fileInfo.metadata.tokenizer?.ggml;
  const pieces: unknown = tokenizer?.tokens;
  const kind: unknown = tokenizer?.model;
  return (token) => {
    const piece: unknown = Array.isArray(pieces) ? pieces[token] : undefined;
    if (typeof piece !== 'string') return undefined;
    if (kind === 'llama') {
      const byte = BYTE_TOKEN.exec(piece);
      return byte ? [parseInt(byte[1], 16)] : undefined;
    }
    if (kind !== 'gpt2') return undefined;
    const bytes = [...piece].map((char) => GPT2_CHAR_TO_BYTE.get(char));
    return bytes.every((byte) => byte !== undefined) ? bytes : undefined;
  };
}
