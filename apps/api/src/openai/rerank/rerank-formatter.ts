import type { CompletionUsage, OutputPart } from '@app/contracts';
import { OpenAiError } from '../../errors/openai-error';

/** One document's place in the answer: its index in the request, its score, and its text when asked for. */
export interface RerankResult {
  index: number;
  relevance_score: number;
  document?: { text: string };
}

/** The answer vLLM, llama.cpp's server and Jina give: results best first. */
export interface RerankBody {
  id: string;
  model: string;
  results: RerankResult[];
  usage: { prompt_tokens: number; total_tokens: number };
}

export interface RerankAnswerShape {
  /** At most this many results (the best); all when absent. */
  topN?: number;
  /** The documents' texts, given back in their results; absent when not asked for. */
  documents?: readonly string[];
}

/** Turns a `rank` job's scores into the rerank answer: sorted by score (ties in request order), cut to `top_n`. */
export class RerankFormatter {
  constructor(
    private readonly id: string,
    private readonly model: string,
    private readonly documentCount: number,
    private readonly shape: RerankAnswerShape,
  ) {}

  /** The whole answer; a score missing or twice is the worker's fault, never a shorter list. */
  body(parts: OutputPart[], usage: CompletionUsage): RerankBody {
    const scores = new Array<number | undefined>(this.documentCount);
    for (const part of parts) {
      if (part.type !== 'score') continue;
      if (part.index >= this.documentCount || scores[part.index] !== undefined)
        throw OpenAiError.internal(`The worker sent a second score for document ${part.index}.`);
      scores[part.index] = part.score;
    }
    const missing = scores.findIndex((score) => score === undefined);
    if (missing >= 0) throw OpenAiError.internal(`The worker sent no score for document ${missing}.`);
    const { topN, documents } = this.shape;
    const ranked = (scores as number[])
      .map((score, index) => ({ index, relevance_score: score }))
      .sort((a, b) => b.relevance_score - a.relevance_score || a.index - b.index)
      .slice(0, topN || undefined);
    return {
      id: this.id,
      model: this.model,
      results: documents ? ranked.map((result) => ({ ...result, document: { text: documents[result.index] } })) : ranked,
      usage: { prompt_tokens: usage.prompt_tokens, total_tokens: usage.prompt_tokens },
    };
  }
}
