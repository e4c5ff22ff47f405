import type { CompletionResult, CompletionUsage, JobOf } from '@app/contracts';
import type { Job, Queue } from 'bullmq';
import type { RequestRecord } from './load-with-kills';

type CompletionJob = Job<JobOf<'generate'>, CompletionResult>;

const sameUsage = (a: CompletionUsage, b: CompletionUsage): boolean =>
  a.prompt_tokens === b.prompt_tokens && a.completion_tokens === b.completion_tokens && a.total_tokens === b.total_tokens;

/** What BullMQ holds after the run. */
export interface JobSummary {
  jobs: number;
  completed: number;
  failed: number;
  /** Jobs still waiting or running when the audit ran (there should be none). */
  unfinished: number;
  /** Jobs a second worker took up after the first one died (attemptsStarted > 1). */
  retried: number;
  retriedCompleted: number;
  /** Completed jobs whose client did not get the answer (its API was killed, or its stream had already failed). */
  finishedForNobody: number;
  /** Completed jobs per worker (BullMQ's processedBy). */
  completedByWorker: Record<string, number>;
  /** Completion tokens of the answers clients received whole (from the jobs' usage). */
  answeredTokens: number;
}

export interface JobAudit {
  summary: JobSummary;
  /** Requests answered twice, or whose answer is not the one answer its job recorded. */
  answeredTwice: Array<{ index: number; detail: string }>;
  /** Requests that completed although their job was retried on another worker. */
  retriedRequests: number[];
}

/**
 * Checks what the clients saw against what BullMQ recorded, request by request (each request's
 * seed is unique, and the job carries it): no request has two completed jobs, every completed
 * answer is exactly the text, finish reason and usage of its own job's return value, and a job is
 * its completion's (job id = completion id).
 */
export async function auditJobs(queue: Queue, records: RequestRecord[]): Promise<JobAudit> {
  const completed = (await queue.getJobs(['completed'])) as CompletionJob[];
  const failed = (await queue.getJobs(['failed'])) as CompletionJob[];
  const unfinished = await queue.getJobs(['active', 'wait', 'delayed', 'prioritized']);
  const completedBySeed = new Map<number, CompletionJob[]>();
  for (const job of completed) {
    const seed = job.data.options.sampling.seed;
    completedBySeed.set(seed, [...(completedBySeed.get(seed) ?? []), job]);
  }
  const byId = new Map([...completed, ...failed].map((job) => [job.id, job]));
  const answeredTwice: JobAudit['answeredTwice'] = [];
  const retriedRequests: number[] = [];
  let finishedForNobody = 0;
  let answeredTokens = 0;

  for (const { request, verdict, answer } of records) {
    const jobs = completedBySeed.get(request.seed) ?? [];
    const problem = (detail: string): number => answeredTwice.push({ index: request.index, detail });
    if (jobs.length > 1) problem(`${jobs.length} completed jobs: ${jobs.map((job) => job.id).join(', ')}`);
    if (verdict !== 'completed') {
      finishedForNobody += jobs.length;
      continue;
    }
    const job = byId.get(answer?.completionId);
    if (!job) {
      problem(`no job ${answer?.completionId} for the answer`);
      continue;
    }
    const result = job.returnvalue as CompletionResult | null;
    if (job.data.options.sampling.seed !== request.seed) problem(`answer ${job.id} belongs to seed ${job.data.options.sampling.seed}`);
    else if (job.data.id !== job.id) problem(`job ${job.id} holds completion ${job.data.id}`);
    else if (!result || job.failedReason) problem(`its job ${job.id} did not complete: ${job.failedReason}`);
    else if (result.text !== answer?.content) problem(`answer differs from the text its job ${job.id} recorded`);
    else if (result.finishReason !== answer.finishReason) problem(`finish_reason ${answer.finishReason}, job recorded ${result.finishReason}`);
    else if (answer.usage && !sameUsage(answer.usage, result.usage))
      problem(`usage ${JSON.stringify(answer.usage)}, job recorded ${JSON.stringify(result.usage)}`);
    if (job.attemptsStarted > 1) retriedRequests.push(request.index);
    answeredTokens += result?.usage.completion_tokens ?? 0;
  }

  const completedByWorker: Record<string, number> = {};
  for (const job of completed) completedByWorker[job.processedBy ?? '?'] = (completedByWorker[job.processedBy ?? '?'] ?? 0) + 1;
  const retried = [...completed, ...failed].filter((job) => job.attemptsStarted > 1);
  const summary: JobSummary = {
    jobs: completed.length + failed.length + unfinished.length,
    completed: completed.length,
    failed: failed.length,
    unfinished: unfinished.length,
    retried: retried.length,
    retriedCompleted: retried.filter((job) => !job.failedReason).length,
    finishedForNobody,
    completedByWorker,
    answeredTokens,
  };
  return { summary, answeredTwice, retriedRequests };
}
