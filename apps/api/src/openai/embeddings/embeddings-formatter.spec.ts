import { encodeVector } from '@app/contracts';
import type { OutputPart } from '@app/contracts';
import { EmbeddingsFormatter, normalized } from './embeddings-formatter';

const usage = { prompt_tokens: 7, completion_tokens: 0, total_tokens: 7 };
const part = (index: number, vector: number[]): OutputPart => ({ type: 'embedding', index, vector: encodeVector(vector) });

describe('EmbeddingsFormatter', () => {
  it('lists the vectors in input order, unit length, as floats or as base64', () => {
    const parts = [part(1, [0, 3, 4]), part(0, [2, 0, 0])];
    const float = new EmbeddingsFormatter('m', 2, 'float', true).body(parts, usage);
    expect(float).toEqual({
      object: 'list',
      data: [
        { object: 'embedding', index: 0, embedding: [1, 0, 0] },
        { object: 'embedding', index: 1, embedding: [0, expect.closeTo(0.6, 6) as number, expect.closeTo(0.8, 6) as number] },
      ],
      model: 'm',
      usage: { prompt_tokens: 7, total_tokens: 7 },
    });
    const base64 = new EmbeddingsFormatter('m', 2, 'base64', true).body(parts, usage);
    expect(base64.data[0].embedding).toBe(encodeVector([1, 0, 0]));
  });

  it('keeps the raw vectors when asked, and a zero vector as it is', () => {
    expect(new EmbeddingsFormatter('m', 1, 'float', false).body([part(0, [0, 3, 4])], usage).data[0].embedding).toEqual([0, 3, 4]);
    expect(Array.from(normalized(Float32Array.from([0, 0])))).toEqual([0, 0]);
  });

  it('never answers with a vector missing or twice', () => {
    const formatter = new EmbeddingsFormatter('m', 2, 'float', true);
    expect(() => formatter.body([part(0, [1])], usage)).toThrow('no vector for input 1');
    expect(() => formatter.body([part(0, [1]), part(0, [1]), part(1, [1])], usage)).toThrow('a second vector for input 0');
  });
});
