/**
 * A vocabulary of a real size for model-shapes.ts: the tiny model's special tokens and 256 byte
 * tokens, every printable ASCII character, then lowercase letter strings (bare and after
 * SentencePiece's space marker), shortest first, until `size` tokens. Every piece's prefixes come
 * before it, so llama.cpp's SPM tokenizer can merge up to it; any other text falls back to bytes.
 */
import { byteTokenText, SPACE, SPECIAL_TOKENS, TokenType } from './vocabulary';

export interface ShapeVocabulary {
  readonly tokens: readonly string[];
  readonly scores: Float32Array;
  readonly types: Int32Array;
  readonly special: { readonly unk: number; readonly bos: number; readonly eos: number; readonly imEnd: number };
  /** Every token that is not a plain piece: a shape model never writes them (their output rows are zero). */
  readonly silentTokens: readonly number[];
}

const LETTERS = 'abcdefghijklmnopqrstuvwxyz';

function* letterStrings(length: number): Generator<string> {
  if (length === 0) {
    yield '';
    return;
  }
  for (const head of letterStrings(length - 1)) for (const letter of LETTERS) yield head + letter;
}

export function shapeVocabulary(size: number): ShapeVocabulary {
  const tokens: string[] = [];
  const types: TokenType[] = [];
  const seen = new Set<string>();
  const add = (text: string, type: TokenType): void => {
    if (tokens.length >= size || seen.has(text)) return;
    seen.add(text);
    tokens.push(text);
    types.push(type);
  };
  for (const special of Object.values(SPECIAL_TOKENS)) add(special.text, special.type);
  for (let byte = 0; byte < 256; byte += 1) add(byteTokenText(byte), TokenType.BYTE);
  add(SPACE, TokenType.NORMAL);
  for (let code = 0x21; code <= 0x7e; code += 1) add(String.fromCharCode(code), TokenType.NORMAL);
  for (let length = 1; tokens.length < size; length += 1) {
    for (const word of letterStrings(length)) {
      add(word, TokenType.NORMAL);
      add(SPACE + word, TokenType.NORMAL);
      if (tokens.length >= size) break;
    }
  }
  const silentTokens = types.flatMap((type, id) => (type === TokenType.NORMAL ? [] : [id]));
  return {
    tokens,
    scores: Float32Array.from(tokens, (text, id) => (types[id] === TokenType.NORMAL ? Array.from(text).length : 0)),
    types: Int32Array.from(types),
    special: { unk: SPECIAL_TOKENS.unk.id, bos: SPECIAL_TOKENS.bos.id, eos: SPECIAL_TOKENS.eos.id, imEnd: SPECIAL_TOKENS.imEnd.id },
    silentTokens,
  };
}
