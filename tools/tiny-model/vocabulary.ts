/**
 * SentencePiece-style ("llama" tokenizer model) vocabulary for the tiny model.
 *
 * llama.cpp's SPM tokenizer starts from single characters and repeatedly merges
 * the adjacent pair whose concatenation is in the vocabulary (highest score
 * first). A word therefore only becomes one token if every prefix on the way is
 * itself a piece, so all prefixes of each whole piece are added, scored by
 * length so longer merges win. Byte tokens <0x00>..<0xFF> make any text
 * tokenizable (byte fallback).
 */

/** SentencePiece's visible space marker. */
export const SPACE = '\u2581';

/** llama_token_type values stored in tokenizer.ggml.token_type. */
export enum TokenType {
  NORMAL = 1,
  UNKNOWN = 2,
  CONTROL = 3,
  /** Added tokens such as Qwen's `<tool_call>`: matched in any text, detokenized as their text. */
  USER_DEFINED = 4,
  BYTE = 6,
}

/** Fixed ids: the first five tokens, in this order, then 256 byte tokens. */
export const SPECIAL_TOKENS = {
  unk: { id: 0, text: '<unk>', type: TokenType.UNKNOWN },
  bos: { id: 1, text: '<s>', type: TokenType.CONTROL },
  eos: { id: 2, text: '</s>', type: TokenType.CONTROL },
  imStart: { id: 3, text: '<|im_start|>', type: TokenType.CONTROL },
  imEnd: { id: 4, text: '<|im_end|>', type: TokenType.CONTROL },
} as const;

export const FIRST_BYTE_TOKEN_ID = 5;

/**
 * Characters always present as single-character pieces: every printable ASCII
 * character (space as SPACE), so prompts and JSON tokenize to characters rather
 * than to byte tokens, and a grammar always finds a one-character token.
 */
const BASE_CHARACTERS = SPACE + Array.from({ length: 0x7e - 0x21 + 1 }, (_, i) => String.fromCharCode(0x21 + i)).join('');

export interface Vocabulary {
  readonly tokens: readonly string[];
  readonly scores: Float32Array;
  readonly types: Int32Array;
  /** Piece text -> token id. */
  readonly ids: ReadonlyMap<string, number>;
}

export function byteTokenText(byte: number): string {
  return `<0x${byte.toString(16).toUpperCase().padStart(2, '0')}>`;
}

/** Code points, so a multi-unit character is never split into halves. */
function prefixes(piece: string): string[] {
  const chars = Array.from(piece);
  return chars.map((_, i) => chars.slice(0, i + 1).join(''));
}

/** Deterministic total order: shorter first, then by code point. */
function comparePieces(a: string, b: string): number {
  const la = Array.from(a).length;
  const lb = Array.from(b).length;
  if (la !== lb) return la - lb;
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * @param wholePieces texts that must each tokenize to exactly one token
 *   (e.g. "▁the", "The", ".").
 * @param userDefined added tokens (e.g. "<tool_call>"), appended after every
 *   piece so the ids of the pieces do not depend on them.
 */
export function buildVocabulary(wholePieces: Iterable<string>, userDefined: readonly string[] = []): Vocabulary {
  const pieceSet = new Set<string>(Array.from(BASE_CHARACTERS));
  for (const piece of wholePieces) {
    if (piece.length === 0) throw new Error('empty vocabulary piece');
    for (const p of prefixes(piece)) pieceSet.add(p);
    // Every character too: a merge can only start from pieces already present.
    for (const ch of Array.from(piece)) pieceSet.add(ch);
  }

  const tokens: string[] = [];
  const scores: number[] = [];
  const types: number[] = [];
  for (const special of Object.values(SPECIAL_TOKENS)) {
    if (special.id !== tokens.length) throw new Error('special token ids must be consecutive from 0');
    tokens.push(special.text);
    scores.push(0);
    types.push(special.type);
  }
  for (let b = 0; b < 256; b++) {
    tokens.push(byteTokenText(b));
    scores.push(0);
    types.push(TokenType.BYTE);
  }
  for (const piece of [...pieceSet].sort(comparePieces)) {
    tokens.push(piece);
    scores.push(Array.from(piece).length);
    types.push(TokenType.NORMAL);
  }
  for (const text of userDefined) {
    tokens.push(text);
    scores.push(0);
    types.push(TokenType.USER_DEFINED);
  }

  const ids = new Map<string, number>();
  tokens.forEach((t, i) => {
    if (ids.has(t)) throw new Error(`duplicate token text: ${t}`);
    ids.set(t, i);
  });
  return { tokens, scores: Float32Array.from(scores), types: Int32Array.from(types), ids };
}
