import type { ChatMessage, SamplingParams } from '@app/contracts';

/**
 * The requests both sides of the comparison run: the engine alone gets exactly the messages and
 * sampling settings that the API derives from these HTTP bodies. Greedy sampling (temperature 0)
 * makes every answer the same length on both sides; the seed is fixed all the same.
 */
const PROMPTS = [
  'Tell me a story.',
  'What did Alice see when she fell down the rabbit hole?',
  'Who is the White Rabbit, and where is he going?',
  'Describe the garden behind the little door.',
  'Why was Alice so curious?',
  'What was written on the bottle?',
  'Tell me about the long hall with the doors.',
  'What happened to the cat?',
];

const SEED_BASE = 4242;

export function messagesFor(index: number): ChatMessage[] {
  return [{ role: 'user', content: PROMPTS[index % PROMPTS.length] }];
}

/** What the API's job mapper produces for requestBody(index, …): the engine alone's input. */
export function samplingFor(index: number, maxTokens: number): SamplingParams {
  return { temperature: 0, topP: 1, maxTokens, stop: [], frequencyPenalty: 0, presencePenalty: 0, seed: SEED_BASE + index };
}

/** The OpenAI request body of the index-th request. */
export function requestBody(index: number, model: string, maxTokens: number, stream: boolean): string {
  return JSON.stringify({
    model,
    messages: messagesFor(index),
    max_tokens: maxTokens,
    temperature: 0,
    seed: SEED_BASE + index,
    stream,
    ...(stream ? { stream_options: { include_usage: true } } : {}),
  });
}
