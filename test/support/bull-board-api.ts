import type { CompletionJobData, CompletionResult } from '@app/contracts';

/** A job as Bull Board's own JSON API hands it to the board's page. */
export interface BoardJob {
  status: string;
  job: {
    id: string;
    data: CompletionJobData;
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
