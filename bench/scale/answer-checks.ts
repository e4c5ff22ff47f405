import type { CompletionUsage } from '@app/contracts';
import type { StreamReading } from '../../test/support/chat-requests';
import { assertMatchesSchema } from '../../test/support/openai-schema';

/**
 * How one request ended, as its client saw it:
 * - `completed`: a 200 with a whole, well-formed answer;
 * - `clear-error`: an OpenAI-shaped error (a status with an error body, or a final error event
 *   followed by [DONE]);
 * - `answered-twice`: more than one answer reached the client (two ids, two finishes);
 * - `lost`: anything else, e.g. a stream without [DONE] or finish, an empty or short answer.
 */
export type Verdict = 'completed' | 'clear-error' | 'answered-twice' | 'lost';

export interface CheckedAnswer {
  verdict: Verdict;
  /** The error's code or the problem found; empty for a completed answer. */
  detail: string;
  completionId?: string;
  content?: string;
  finishReason?: string;
  /** Absent for a stream that did not ask for usage. */
  usage?: CompletionUsage;
}

interface Expectation {
  maxTokens: number;
  includeUsage: boolean;
}

interface ChunkChoice {
  delta?: { role?: string; content?: string };
  finish_reason?: string | null;
}

interface Chunk {
  id?: string;
  choices?: ChunkChoice[];
  usage?: CompletionUsage | null;
  error?: { type?: string; code?: string | null; message?: string };
}

const lost = (detail: string): CheckedAnswer => ({ verdict: 'lost', detail });
const twice = (detail: string): CheckedAnswer => ({ verdict: 'answered-twice', detail });

function schemaProblem(name: string, value: unknown): string | undefined {
  try {
    assertMatchesSchema(name, value);
    return undefined;
  } catch (error) {
    return (error as Error).message.split('\n')[0];
  }
}

/** Usage must add up and agree with the finish reason and the request's max_tokens. */
function usageProblem(usage: CompletionUsage, finishReason: string, { maxTokens }: Expectation): string | undefined {
  if (usage.total_tokens !== usage.prompt_tokens + usage.completion_tokens) return `usage does not add up: ${JSON.stringify(usage)}`;
  if (usage.completion_tokens < 1 || usage.completion_tokens > maxTokens) return `completion_tokens ${usage.completion_tokens} outside 1..${maxTokens}`;
  if (finishReason === 'length' && usage.completion_tokens !== maxTokens) return `finish_reason length after ${usage.completion_tokens} of ${maxTokens} tokens`;
  return undefined;
}

/** An error's code (or type) and the start of its message, to tell kinds of errors apart in a report. */
function errorCode(body: Chunk): string {
  const message = body.error?.message ?? '';
  return `${body.error?.code ?? body.error?.type ?? 'error'} (${message.length > 40 ? `${message.slice(0, 40)}…` : message})`;
}

/** A plain (non-SSE) answer: a chat.completion body, or an OpenAI error body with its status. */
export function checkPlainAnswer(status: number, text: string, expectation: Expectation): CheckedAnswer {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return lost(`HTTP ${status} with a body that is not JSON: ${text.slice(0, 120)}`);
  }
  if (status !== 200) {
    const problem = schemaProblem('ErrorResponse', body);
    return problem ? lost(`HTTP ${status}: ${problem}`) : { verdict: 'clear-error', detail: `HTTP ${status} ${errorCode(body as Chunk)}` };
  }
  const problem = schemaProblem('CreateChatCompletionResponse', body);
  if (problem) return lost(problem);
  const completion = body as { id: string; choices: Array<{ message: { content: string | null }; finish_reason: string }>; usage: CompletionUsage };
  if (completion.choices.length !== 1) return twice(`${completion.choices.length} choices`);
  const [{ message, finish_reason: finishReason }] = completion.choices;
  if (!message.content) return lost('200 with an empty answer');
  if (finishReason !== 'stop' && finishReason !== 'length') return lost(`finish_reason ${finishReason}`);
  const badUsage = usageProblem(completion.usage, finishReason, expectation);
  if (badUsage) return lost(badUsage);
  return { verdict: 'completed', detail: '', completionId: completion.id, content: message.content, finishReason, usage: completion.usage };
}

/** An SSE answer: chunks of one id, one finish, optional usage, then [DONE]; or a final error event then [DONE]. */
export function checkStreamAnswer(reading: StreamReading, eventsAfterDone: number, expectation: Expectation): CheckedAnswer {
  const events = reading.events as Chunk[];
  if (eventsAfterDone > 0) return twice(`${eventsAfterDone} events after [DONE]`);
  const ids = new Set(events.filter((event) => !event.error).map((event) => event.id));
  if (ids.size > 1) return twice(`chunks of ${ids.size} different ids`);
  const errorAt = events.findIndex((event) => event.error);
  if (errorAt >= 0) {
    if (errorAt !== events.length - 1) return lost('an error event that is not the last event');
    if (!reading.sawDone) return lost('an error event without [DONE]');
    const problem = schemaProblem('ErrorResponse', events[errorAt]);
    return problem ? lost(problem) : { verdict: 'clear-error', detail: `stream error event ${errorCode(events[errorAt])}` };
  }
  if (!reading.sawDone) return lost(`stream ended without [DONE] after ${events.length} events`);
  for (const event of events) {
    const problem = schemaProblem('CreateChatCompletionStreamResponse', event);
    if (problem) return lost(problem);
  }
  if (events[0]?.choices?.[0]?.delta?.role !== 'assistant') return lost('first chunk does not announce the assistant role');
  const finishes = events.flatMap((event, at) => (event.choices?.[0]?.finish_reason ? [at] : []));
  if (finishes.length === 0) return lost('stream without a finish chunk');
  if (finishes.length > 1) return twice(`${finishes.length} finish chunks`);
  const finishAt = finishes[0];
  const finishReason = events[finishAt].choices![0].finish_reason!;
  if (finishReason !== 'stop' && finishReason !== 'length') return lost(`finish_reason ${finishReason}`);
  if (events.slice(finishAt + 1).some((event) => event.choices?.length)) return lost('chunks after the finish chunk');
  if (!reading.content) return lost('a finished stream with no text');

  const usages = events.filter((event) => event.usage);
  if (usages.length !== (expectation.includeUsage ? 1 : 0)) return lost(`${usages.length} usage chunks`);
  const usage = usages[0]?.usage ?? undefined;
  if (usage) {
    if (usages[0] !== events.at(-1)) return lost('usage chunk is not the last chunk');
    const badUsage = usageProblem(usage, finishReason, expectation);
    if (badUsage) return lost(badUsage);
  }
  return { verdict: 'completed', detail: '', completionId: [...ids][0], content: reading.content, finishReason, usage };
}
