/** What a `rank` job asks of its engine: how relevant each document is to the query, one score each. */
export interface RankOptions {
  query: string;
  documents: string[];
}

/** Most documents one rerank request may hold (Cohere's bound, which vLLM and llama.cpp's server leave open). */
export const MAX_RANK_DOCUMENTS = 1000;
