import type { CompletionResult } from '@app/contracts';
import type { RetainedJobData } from '@app/worker';

/** A job as Bull Board's own JSON API hands it to the board's page. */
export interface BoardJob {
  status: string;
  job: {
    id: string;
    /** The job's command, and the retention's record once its contents are removed. */
    data: RetainedJobData;
    returnValue?: CompletionResult | null;
    failedReason?: string;
    finishedOn?: number;
    processedBy?: string;
  };
}

export const basicAuth = (user: string, password: string): string => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

/** GET <board>/api/queues/<queue>/<job>: the job as an operator's browser loads it. */
export async function boardJob(boardUrl: string, authorization: string, queueName: string, jobId: string): Promise<BoardJob | undefined> {
  const response = await fetch(`${boardUrl}/api/queues/${encodeURIComponent(queueName)}/${encodeURIComponent(jobId)}`, { headers: { authorization } });
  if (response.status === 404) return undefined;
  if (response.status !== 200) throw new Error(`Bull Board answered ${response.status}: ${await response.text()}`);
  return (await response.json()) as BoardJob;
}

/**
 * The job, once the board shows it ended as `status`; else undefined. The board reads a job and
 * then its state, in two steps: a job read just before it ended can come back with the later
 * state and the earlier fields (no return value, contents not yet removed). Its own `finishedOn`
 * says the read came after the end.
 */
export function endedAs(found: BoardJob | undefined, status: 'completed' | 'failed'): BoardJob | undefined {
  return found?.status === status && found.job.finishedOn ? found : undefined;
}
