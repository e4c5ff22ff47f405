import { Injectable } from '@nestjs/common';
import type { CompletionJobData, CompletionResult } from '@app/contracts';
import type { Worker } from 'bullmq';
import { WorkerMetrics } from './worker-metrics';

/**
 * Watches the BullMQ Worker the processor creates: records each job's queue wait from BullMQ's
 * own timestamps (processedOn - timestamp) and tells readiness whether the worker is running.
 */
@Injectable()
export class QueueWorkerMonitor {
  private worker: Worker<CompletionJobData, CompletionResult> | undefined;

  constructor(private readonly metrics: WorkerMetrics) {}

  watch(worker: Worker<CompletionJobData, CompletionResult>): void {
    this.worker = worker;
    worker.on('active', (job) => {
      // A retried job's timestamp is its first enqueue: only first attempts measure the wait.
      if (job.attemptsStarted > 1 || job.processedOn === undefined) return;
      this.metrics.queueWait.observe({ model: this.metrics.model }, Math.max(job.processedOn - job.timestamp, 0) / 1000);
    });
  }

  /** Whether a queue worker is taking jobs (false before it starts and once it closes). */
  get isRunning(): boolean {
    return this.worker !== undefined && this.worker.isRunning() && this.worker.closing === undefined;
  }
}
