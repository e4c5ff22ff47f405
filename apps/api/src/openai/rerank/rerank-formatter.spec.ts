import type { OutputPart } from '@app/contracts';
import { RerankFormatter } from './rerank-formatter';

const usage = { prompt_tokens: 30, completion_tokens: 0, total_tokens: 30 };
const score = (index: number, value: number): OutputPart => ({ type: 'score', index, score: value });

describe('RerankFormatter', () => {
  it('answers best first (ties in request order), cut to top_n, with the documents when given', () => {
    const parts = [score(2, 0.9), score(0, 0.2), score(1, 0.9), score(3, 0.5)];
    const all = new RerankFormatter('rerank-1', 'm', 4, { documents: ['a', 'b', 'c', 'd'] }).body(parts, usage);
    expect(all).toEqual({
      id: 'rerank-1',
      model: 'm',
      results: [
        { index: 1, relevance_score: 0.9, document: { text: 'b' } },
        { index: 2, relevance_score: 0.9, document: { text: 'c' } },
        { index: 3, relevance_score: 0.5, document: { text: 'd' } },
        { index: 0, relevance_score: 0.2, document: { text: 'a' } },
      ],
      usage: { prompt_tokens: 30, total_tokens: 30 },
    });
    const top = new RerankFormatter('rerank-1', 'm', 4, { topN: 2 }).body(parts, usage);
    expect(top.results).toEqual([
      { index: 1, relevance_score: 0.9 },
      { index: 2, relevance_score: 0.9 },
    ]);
    expect(new RerankFormatter('rerank-1', 'm', 4, { topN: 0 }).body(parts, usage).results).toHaveLength(4);
  });

  it('never answers with a score missing or twice', () => {
    const formatter = new RerankFormatter('rerank-1', 'm', 2, {});
    expect(() => formatter.body([score(0, 0.1)], usage)).toThrow('no score for document 1');
    expect(() => formatter.body([score(0, 0.1), score(0, 0.2), score(1, 0.3)], usage)).toThrow('a second score for document 0');
  });
});
