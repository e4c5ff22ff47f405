import { Injectable } from '@nestjs/common';
import type { CompletionJobData, CompletionResult } from '@app/contracts';
import type { Worker } from 'bullmq';
import { WorkerMetrics } from './worker-metrics';

/**
 * Watches the BullMQ Workers the processor creates: records each job's queue wait from BullMQ's
 * own timestamps (processedOn - timestamp) and tells readiness whether they are all running, or draining.
 */
@Injectable()
export class QueueWorkerMonitor {
  private readonly workers: Array<Worker<CompletionJobData, CompletionResult>> = [];

  constructor(private readonly metrics: WorkerMetrics) {}

  watch(worker: Worker<CompletionJobData, CompletionResult>): void {
    this.workers.push(worker);
    worker.on('active', (job) => {
      // A retried job's timestamp is its first enqueue: only first attempts measure the wait.
      if (job.attemptsStarted > 1 || job.processedOn === undefined) return;
      this.metrics.queueWait.observe({ model: this.metrics.model }, Math.max(job.processedOn - job.timestamp, 0) / 1000);
    });
  }

  /** Whether the queue workers are taking jobs (false before they start and once one closes). */
  get isRunning(): boolean {
    return this.workers.length > 0 && this.workers.every((worker) => worker.isRunning() && worker.closing === undefined);
  }

  /** Whether the worker drains: its queue workers were told to close and finish their running jobs (it never ends). */
  get isDraining(): boolean {
    return this.workers.some((worker) => worker.closing !== undefined);
  }
}
