/** The door's name for what it scores: a failure about it (a document too long for the model) names it. A rerank is answered whole. */
export const PROMPT_PARAM = 'documents';
