import type { LlamaModel, Token } from 'node-llama-cpp' with { 'resolution-mode': 'import' };
import { vocabularyBytes } from './llama-token-bytes';

const withVocabulary = (model: string, tokens: string[]): LlamaModel =>
  ({ fileInfo: { metadata: { tokenizer: { ggml: { model, tokens } } } } }) as unknown as LlamaModel;
const token = (id: number): Token => id as Token;

describe('vocabularyBytes', () => {
  it("reads SentencePiece's byte tokens, and leaves its other pieces to their text", () => {
    const bytesOf = vocabularyBytes(withVocabulary('llama', ['<unk>', '<0xE2>', '<0x0A>', '▁the']));
    expect(bytesOf(token(1))).toEqual([0xe2]);
    expect(bytesOf(token(2))).toEqual([0x0a]);
    expect(bytesOf(token(3))).toBeUndefined();
    expect(bytesOf(token(0))).toBeUndefined();
  });

  it("reads byte-level BPE pieces through GPT-2's byte-to-character table", () => {
    // "Ġ" is the space byte; "â", "Ĥ" and "¬" are the three bytes of "€" (E2 82 AC).
    const bytesOf = vocabularyBytes(withVocabulary('gpt2', ['Ġthe', 'â', 'Ĥ¬', '<|endoftext|>', 'ĊĠ']));
    expect(bytesOf(token(0))).toEqual([...Buffer.from(' the')]);
    expect(bytesOf(token(1))).toEqual([0xe2]);
    expect(bytesOf(token(2))).toEqual([0x82, 0xac]);
    expect(Buffer.from([0xe2, 0x82, 0xac]).toString('utf8')).toBe('€');
    expect(bytesOf(token(4))).toEqual([0x0a, 0x20]);
    // A special token's characters (`<`, `|`) are printable bytes, so it reads as its own text.
    expect(bytesOf(token(3))).toEqual([...Buffer.from('<|endoftext|>')]);
  });

  it('says nothing for a token out of range or a tokenizer of another kind', () => {
    expect(vocabularyBytes(withVocabulary('llama', ['<0xE2>']))(token(5))).toBeUndefined();
    expect(vocabularyBytes(withVocabulary('bert', ['<0xE2>']))(token(0))).toBeUndefined();
  });
});
