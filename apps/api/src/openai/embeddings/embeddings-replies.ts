/** The door's name for what it embeds: a failure about it names it. Embeddings are answered whole (OpenAI's route does not stream). */
export const PROMPT_PARAM = 'input';
