import type { ChatRequestBody } from '../../test/support/chat-requests';
import { mulberry32 } from '../common/seeded-random';

/** One request of the scale-out load: its body and what the checks need to know about it. */
export interface ScaleRequest {
  index: number;
  /** Unique per request: the marker that finds its job(s) in BullMQ (job.data.options.sampling.seed). */
  seed: number;
  stream: boolean;
  includeUsage: boolean;
  maxTokens: number;
  body: ChatRequestBody;
}

const PROMPTS = [
  'Tell me a story.',
  'What did Alice see when she fell down the rabbit hole?',
  'Who is the White Rabbit, and where is he going?',
  'Describe the garden behind the little door.',
  'What was written on the bottle?',
];

export const MIN_MAX_TOKENS = 20;
export const MAX_MAX_TOKENS = 200;
const SEED_BASE = 700_000;

/**
 * `count` requests: half streamed (every other one with usage), sampled at temperature 1 with a
 * unique seed each, `max_tokens` spread over 20–200. The `user` field names the request too, for
 * reading the API's request log.
 */
export function scaleWorkload(count: number, model: string): ScaleRequest[] {
  const random = mulberry32(count);
  return Array.from({ length: count }, (_, index) => {
    const seed = SEED_BASE + index;
    const stream = index % 2 === 1;
    const includeUsage = stream && index % 4 === 1;
    const maxTokens = MIN_MAX_TOKENS + Math.floor(random() * (MAX_MAX_TOKENS - MIN_MAX_TOKENS + 1));
    const body: ChatRequestBody = {
      model,
      messages: [{ role: 'user', content: PROMPTS[index % PROMPTS.length] }],
      max_tokens: maxTokens,
      temperature: 1,
      seed,
      user: `scale-out-${index}`,
      ...(stream ? { stream: true } : {}),
      ...(includeUsage ? { stream_options: { include_usage: true } } : {}),
    };
    return { index, seed, stream, includeUsage, maxTokens, body };
  });
}

/** The same question asked again without streaming: a seeded answer must come out identical. */
export function nonStreamBody(request: ScaleRequest): ChatRequestBody {
  const body = { ...request.body };
  delete body.stream;
  delete body.stream_options;
  return body;
}
