import { callChat } from './chat-call';
import type { RequestRecord } from './load-with-kills';
import { nonStreamBody } from './scale-workload';

export interface RetriedAnswersCheck {
  checked: number;
  identical: number;
  /** Indexes of requests whose retried answer differs from a fresh one. */
  different: number[];
}

/**
 * A job retried on another worker after its worker died must answer exactly as a run that never
 * failed: each such completed request is asked again (same seed, no stream) on a surviving API
 * and the two texts compared. Run it after the job audit: the re-asked requests add jobs.
 */
export async function checkRetriedAnswers(
  records: RequestRecord[],
  retriedIndexes: number[],
  survivor: { baseUrl: string; apiKey: string; timeoutMs: number; limit: number },
): Promise<RetriedAnswersCheck> {
  const retried = records.filter((record) => retriedIndexes.includes(record.request.index)).slice(0, survivor.limit);
  const different: number[] = [];
  for (const { request, answer } of retried) {
    const again = await callChat(survivor.baseUrl, survivor.apiKey, { ...request, stream: false, body: nonStreamBody(request) }, survivor.timeoutMs);
    const content = again.kind === 'answered' ? again.answer.content : undefined;
    if (content === undefined || content !== answer?.content) different.push(request.index);
  }
  return { checked: retried.length, identical: retried.length - different.length, different };
}
