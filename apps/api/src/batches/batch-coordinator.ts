import { Inject, Injectable, Logger } from '@nestjs/common';
import type { OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import { BATCH_PRIORITY, cancellationsChannel, COMPLETION_JOB_VERSION, CompletionJobName } from '@app/contracts';
import type { CompletionJobInput } from '@app/contracts';
import type { RedisClient } from '@app/redis';
import { DelayedError } from 'bullmq';
import type { Job } from 'bullmq';
import { API_INSTANCE_ID, COMMANDS_REDIS } from '../redis/api-redis.module';
import { CompletionQueues, isInProgress } from '../pipeline/completion-queues';
import { toOpenAiError } from '../errors/http-error-mapping';
import { OpenAiError } from '../errors/openai-error';
import { FilesService } from '../files/files.service';
import { ModelRegistry } from '../models/model-registry';
import { BatchLineDoors } from './batch-line-doors';
import { isBatchError, parseLine } from './batch-lines';
import type { BatchLine } from './batch-lines';
import { batchKeys, isFinished, lineCompletionId } from './batch-object';
import type { BatchError, BatchRecord } from './batch-object';
import { BatchQueue } from './batch-queue';
import type { BatchJobData } from './batch-queue';
import { BatchRecords } from './batch-records';
import { BatchResultFiles } from './batch-result-files';
import type { LineFailure } from './batch-records';
import { isActive, moveBatch } from './batch-transitions';
import type { ActiveBatchStatus, BatchTransition } from './batch-transitions';
import { COORDINATE_BATCHES, START_BATCH_WORKER } from './batch-worker';
import type { RunningBatchWorker, StartBatchWorker } from './batch-worker';

/** A line of the input file fed to the queue: its position in the file and its job. */
interface FedLine {
  index: number;
  job: CompletionJobInput;
}

/** How often a running batch is looked at: its counts, a cancel, its window, its end. */
const TICK_MS = 500;
/** Lines added to the model's queue per round trip, and outcomes read per round trip. */
const CHUNK = 200;
/** Envelope errors reported before validation stops reading. */
const MAX_ERRORS = 100;
/** How often a running batch checks for lines whose job ended without an outcome (a job lost twice). */
const SWEEP_EVERY_MS = 10_000;
/** How often a coordinator asks for the turn to look for unfinished batches whose job is lost (one looks per period). */
const REDRIVE_EVERY_MS = 10_000;

const seconds = (ms: number): number => Math.floor(ms / 1000);

/**
 * Runs batches, one BullMQ job each on the `batches` queue, which any API instance with
 * BATCH_COORDINATOR takes: a batch survives the instance that was running it. Each step reads
 * the batch's state from Redis, does what is due and comes back TICK_MS later (a delayed job):
 * - validating: every line's envelope (a bad one, a repeated custom_id or a second model fails
 *   the batch);
 * - in_progress, until queued: every body as its endpoint's door checks it; valid lines
 *   become jobs on the model's queue below every interactive request, refused ones failures;
 * - in_progress: counts the outcomes that workers write; on cancel or past the window, takes the
 *   waiting lines off the queue and stops the running ones;
 * - finalizing: writes the output and error files in input order.
 * Line job ids are fixed by batch and line, and a line with an outcome is never queued again, so
 * a step repeated after a crash neither loses nor doubles a line.
 */
@Injectable()
export class BatchCoordinator implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(BatchCoordinator.name);
  private readonly retentionMs: number;
  private worker: RunningBatchWorker | undefined;
  private redriveTimer: NodeJS.Timeout | undefined;
  private redriving = false;

  constructor(
    private readonly env: ApiEnv,
    private readonly records: BatchRecords,
    private readonly files: FilesService,
    private readonly queues: CompletionQueues,
    private readonly models: ModelRegistry,
    private readonly batchQueue: BatchQueue,
    private readonly doors: BatchLineDoors,
    private readonly resultFiles: BatchResultFiles,
    @Inject(COMMANDS_REDIS) private readonly commands: RedisClient,
    @Inject(API_INSTANCE_ID) private readonly instanceId: string,
    /** Builds the BullMQ Worker (on a blocking connection of its own) that hands this coordinator its steps. */
    @Inject(START_BATCH_WORKER) private readonly startWorker: StartBatchWorker,
    /** BATCH_COORDINATOR in an API instance; always in the coordinator's own process. */
    @Inject(COORDINATE_BATCHES) private readonly coordinates: boolean,
  ) {
    this.retentionMs = env.BATCH_RETENTION_SECONDS * 1000;
  }

  onApplicationBootstrap(): void {
    if (!this.coordinates) return;
    this.worker = this.startWorker((job, token) => this.step(job, token));
    this.worker.worker.on('error', (error) => this.logger.warn(`batch coordinator: ${error.message}`));
    this.redriveTimer = setInterval(() => {
      this.redrive().catch((error: Error) => this.logger.warn(`batch coordinator: looking for lost batch jobs: ${error.message}`));
    }, REDRIVE_EVERY_MS);
    this.redriveTimer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.redriveTimer);
    await this.worker?.close();
  }

  /**
   * An unfinished batch whose job is gone (its instance died between writing the record and
   * queueing the job, or an operator removed it) is queued again; one whose job ended (failed for
   * good after about 5 h of failing steps: storage or Redis away) is retried. Steps are repeatable, and the
   * job id is the batch id, so coordinators doing this side by side queue it once. One coordinator
   * looks per period: the turn lapses a little before its holder's next look, so that one usually
   * keeps it, and another takes it over when that instance is gone.
   */
  private async redrive(): Promise<void> {
    // A look that outlasts the period (many batches, a slow Redis) is not doubled by the next one.
    if (this.redriving || !(await this.records.claimRedriveTurn(this.instanceId, REDRIVE_EVERY_MS * 0.9))) return;
    this.redriving = true;
    try {
      const ids = await this.records.unfinished(this.retentionMs);
      await Promise.all(ids.map((id) => this.redriveBatch(id)));
    } finally {
      this.redriving = false;
    }
  }

  /** One round trip for a batch whose job runs or waits; the record is read only when its job is gone or ended. */
  private async redriveBatch(id: string): Promise<void> {
    const { queue } = this.batchQueue;
    const state = await queue.getJobState(id);
    if (state !== 'unknown' && state !== 'failed' && state !== 'completed') return;
    const batch = await this.records.find(id);
    if (!batch || isFinished(batch.status)) return this.records.forgetUnfinished(id);
    if (state === 'unknown') {
      this.logger.warn(`batch ${id} had no coordination job: queued again`);
      await this.batchQueue.start(id);
    } else {
      this.logger.warn(`batch ${id}'s coordination job had ${state} with the batch unfinished: retried`);
      await (await queue.getJob(id))?.retry(state);
    }
  }

  /** What a step does for a batch in each status that still has work. */
  private readonly handlers: Readonly<Record<ActiveBatchStatus, (batch: BatchRecord) => Promise<void>>> = {
    validating: (batch) => this.validate(batch),
    in_progress: (batch) => this.advance(batch),
    cancelling: (batch) => this.advance(batch),
    finalizing: (batch) => this.finalize(batch),
  };

  /** Moves the batch to another status, stamped with the time now (saved by the caller). */
  private move(batch: BatchRecord, transition: BatchTransition): void {
    moveBatch(batch, transition, seconds(Date.now()));
  }

  private async step(job: Job<BatchJobData>, token: string | undefined): Promise<void> {
    const batch = await this.records.find(job.data.batchId);
    if (!batch || !isActive(batch.status)) return;
    try {
      await this.handlers[batch.status](batch);
    } catch (error) {
      // Anything else (Redis or storage away for a moment) fails the step; its job retries it.
      if (!(error instanceof OpenAiError && error.code === 'file_not_found')) throw error;
      // Its queued and running lines would answer for nobody: withdrawn and stopped first.
      if (batch.fed) await this.stopLines(batch);
      // No result file can be written without the file's custom_ids: every line not answered by
      // now has failed, so the counts add up to the total as a finished batch's do.
      const { answered } = await this.records.counts(batch.id);
      const { total } = batch.request_counts;
      batch.request_counts = { total, completed: Math.min(answered, total), failed: Math.max(total - answered, 0) };
      const message = `The input file ${batch.input_file_id} was deleted while the batch ran.`;
      this.move(batch, { to: 'failed', errors: [{ code: 'input_file_missing', message, param: 'input_file_id', line: null }] });
      await this.records.save(batch);
    }
    if (isFinished(batch.status) || token === undefined) return;
    await job.moveToDelayed(Date.now() + TICK_MS, token);
    throw new DelayedError();
  }

  private async validate(batch: BatchRecord): Promise<void> {
    const errors = await this.checkEnvelopes(batch);
    if (errors.length > 0) {
      this.move(batch, { to: 'failed', errors });
      return this.records.save(batch);
    }
    this.move(batch, { to: 'in_progress' });
    batch.fed = { index: 0, line: 0, byte: 0 };
    await this.records.save(batch);
    // Cancelled while its file was checked: nothing is queued; the next step stops every line.
    if ((await this.records.cancelRequestedAt(batch.id)) !== null) return;
    await this.feed(batch, this.env.BATCH_FEED_WINDOW);
  }

  /**
   * The second pass, a window at a time: up to `count` more lines, each body checked as a request
   * and queued as its line's job, or failed as the request would have been. The batch's position
   * in its file is saved after each chunk, so a feed cut short by a crash resumes there (a line
   * fed twice keeps its job id, and one with an outcome is not queued again). Only BATCH_FEED_WINDOW
   * lines of a batch wait in Redis at a time, whatever the size of its file.
   */
  private async feed(batch: BatchRecord, count: number): Promise<void> {
    const fed = batch.fed ?? { index: 0, line: 0, byte: 0 };
    const startedAt = (batch.in_progress_at ?? batch.created_at) * 1000;
    let chunk: FedLine[] = [];
    let refused: Array<{ index: number; failure: LineFailure }> = [];
    let taken = 0;
    const flush = async (): Promise<void> => {
      // Side by side: the refusals of a chunk share round trips rather than take two each in turn.
      await Promise.all([this.enqueue(batch, chunk), ...refused.map(({ index, failure }) => this.records.fail(batch.id, index, failure, this.retentionMs))]);
      chunk = [];
      refused = [];
      batch.fed = { ...fed };
      await this.records.save(batch);
    };
    for await (const { line, text, end } of this.files.lines(batch.owner, batch.input_file_id, fed)) {
      const index = fed.index;
      const { body } = parseLine(text, line, batch.endpoint) as BatchLine;
      try {
        chunk.push({ index, job: await this.doors.of(batch.endpoint).lineJob(body, lineCompletionId(batch.id, index), startedAt, batch.expires_at * 1000) });
      } catch (error) {
        const refusal = toOpenAiError(error);
        refused.push({ index, failure: { refused: { status: refusal.status, body: refusal.toBody() } } });
      }
      Object.assign(fed, { index: index + 1, line, byte: end });
      if (++taken >= count) break;
      if (chunk.length + refused.length >= CHUNK) await flush();
    }
    await flush();
  }

  /** The first pass over the file: what fails the whole batch. Sets its total and model. */
  private async checkEnvelopes(batch: BatchRecord): Promise<BatchError[]> {
    const errors: BatchError[] = [];
    const customIds = new Set<string>();
    let total = 0;
    for await (const { line, text } of this.files.lines(batch.owner, batch.input_file_id)) {
      total++;
      const parsed = parseLine(text, line, batch.endpoint);
      if (isBatchError(parsed)) {
        errors.push(parsed);
      } else {
        if (customIds.has(parsed.customId)) {
          errors.push({
            code: 'duplicate_custom_id',
            message: `Line ${line}: custom_id '${parsed.customId}' is already used by an earlier line.`,
            param: 'custom_id',
            line,
          });
        }
        customIds.add(parsed.customId);
        const { model } = parsed.body;
        if (typeof model === 'string' && batch.model !== undefined && model !== batch.model) {
          errors.push({ code: 'mixed_models', message: `Line ${line}: every request of a batch must use one model ('${batch.model}').`, param: 'model', line });
        }
        if (typeof model === 'string') batch.model ??= model;
      }
      if (errors.length >= MAX_ERRORS) break;
    }
    batch.request_counts = { total, completed: 0, failed: 0 };
    if (total === 0) errors.push({ code: 'empty_file', message: 'The input file has no requests.', param: 'input_file_id', line: null });
    if (batch.model !== undefined && !this.models.serves(batch.model)) {
      errors.push({
        code: 'model_not_found',
        message: `The model \`${batch.model}\` does not exist or you do not have access to it.`,
        param: 'model',
        line: null,
      });
    }
    return errors;
  }

  /** Adds lines to the model's queue below every interactive request; an id already there is left as it is. */
  private async enqueue(batch: BatchRecord, lines: FedLine[]): Promise<void> {
    if (lines.length === 0 || batch.model === undefined) return;
    const keys = batchKeys(batch.id);
    // No channel: nobody follows a line live; its outcome goes to the batch's hashes.
    const replyTo = { stopWhenUnheard: false };
    const queue = this.queues.forModel(batch.model);
    // Read just before adding: a line answered since the pass began (and gone from the queue) is not run again.
    const outcomes = await this.records.outcomes(
      batch.id,
      lines.map(({ index }) => index),
    );
    const open = lines.filter((_, position) => !outcomes[position].answer && !outcomes[position].failure);
    await queue.addBulk(
      open.map(({ index, job }) => ({
        name: CompletionJobName.BatchLine,
        data: {
          v: COMPLETION_JOB_VERSION,
          ...job,
          replyTo,
          store: { key: keys.answers, field: String(index), ttlMs: this.retentionMs, failuresKey: keys.failures },
        },
        opts: { jobId: job.id, priority: BATCH_PRIORITY },
      })),
    );
  }

  private async advance(batch: BatchRecord): Promise<void> {
    const cancelRequestedAt = await this.records.cancelRequestedAt(batch.id);
    const now = Date.now();
    if (batch.stopping === undefined && (cancelRequestedAt !== null || seconds(now) >= batch.expires_at)) {
      batch.stopping = cancelRequestedAt !== null ? 'cancelled' : 'expired';
      if (cancelRequestedAt !== null) this.move(batch, { to: 'cancelling', requestedAt: cancelRequestedAt });
      // Saved only after every line was stopped: a step cut short here is done again in full.
      await this.stopLines(batch);
      batch.swept_at = now;
      await this.records.save(batch);
    }
    const { answered, failed } = await this.records.counts(batch.id);
    const { total } = batch.request_counts;
    batch.request_counts = { total, completed: answered, failed: Math.min(failed, total - answered) };
    const fedLines = batch.fed?.index ?? total;
    const waiting = fedLines - answered - failed;
    const window = this.env.BATCH_FEED_WINDOW;
    // Topped up once half the window has ended: the workers never run dry between two ticks.
    if (batch.stopping === undefined && fedLines < total && waiting <= window / 2) await this.feed(batch, window - waiting);
    // The counts are a cheap sign; whether every line has an outcome is checked line by line.
    if (answered + failed >= total && (await this.records.finishedLines(batch.id)).size >= total) return this.finalize(batch);
    if (now - (batch.swept_at ?? (batch.in_progress_at ?? batch.created_at) * 1000) >= SWEEP_EVERY_MS) {
      batch.swept_at = now;
      // A stopping batch's lines are stopped again: a line that a dead worker's job still holds
      // (no worker of its model left to find it stalled) is taken off, and one that another
      // worker took up since the first stop is told to stop too.
      if (batch.stopping !== undefined) await this.stopLines(batch);
      else await this.sweepLostLines(batch);
    }
    await this.records.save(batch);
  }

  /**
   * Calls `act` for every line without an outcome, with its job's state (`unfed` for a line never
   * queued), a chunk at a time: one round trip per chunk for the states and one for the actions.
   */
  private async forOpenLines(batch: BatchRecord, act: (line: { index: number; jobId: string; state: string }) => Promise<void>): Promise<void> {
    const { model } = batch;
    const fedLines = batch.fed?.index ?? batch.request_counts.total;
    const finished = await this.records.finishedLines(batch.id);
    const open = Array.from({ length: batch.request_counts.total }, (_, index) => index).filter((index) => !finished.has(index));
    for (let start = 0; start < open.length; start += CHUNK) {
      const chunk = open.slice(start, start + CHUNK).map((index) => ({ index, jobId: lineCompletionId(batch.id, index) }));
      const queue = model === undefined ? undefined : this.queues.forModel(model);
      const states = await Promise.all(chunk.map(async ({ index, jobId }) => (index >= fedLines || !queue ? 'unfed' : queue.getJobState(jobId))));
      await Promise.all(chunk.map((line, position) => act({ ...line, state: states[position] })));
    }
  }

  /**
   * Cancel or window past: waiting lines leave the queue unrun, running ones are stopped (their
   * worker reports them), and lost ones have failed. BullMQ removes a running job only once its
   * lock has lapsed: its worker died.
   */
  private async stopLines(batch: BatchRecord): Promise<void> {
    const { model, stopping = 'cancelled' } = batch;
    await this.forOpenLines(batch, async ({ index, jobId, state }) => {
      if (state === 'unknown' || state === 'unfed') return this.records.fail(batch.id, index, { unrun: stopping }, this.retentionMs);
      if (!isInProgress(state) || model === undefined) return this.failLostLine(batch, index);
      if ((await this.queues.forModel(model).remove(jobId)) === 1) await this.records.fail(batch.id, index, { unrun: stopping }, this.retentionMs);
      else await this.commands.spublish(cancellationsChannel(model), jobId);
    });
  }

  /** A line whose job ended with no outcome written (its workers died, or an operator removed it) has failed. */
  private async sweepLostLines(batch: BatchRecord): Promise<void> {
    await this.forOpenLines(batch, async ({ index, state }) => {
      if (!isInProgress(state) && state !== 'unfed') await this.failLostLine(batch, index);
    });
  }

  /** Written after the job ended: an outcome the worker wrote since the states were read wins. */
  private async failLostLine(batch: BatchRecord, index: number): Promise<void> {
    await this.records.fail(batch.id, index, { code: 'engine_error', message: 'The request was lost with its worker and was not answered.' }, this.retentionMs);
  }

  /**
   * Every line has an outcome: the output and the error file, in input order, each streamed to
   * storage in one pass over the input (no file is held whole in memory), then the exact counts.
   */
  private async finalize(batch: BatchRecord): Promise<void> {
    if (batch.status !== 'finalizing') {
      this.move(batch, { to: 'finalizing' });
      await this.records.save(batch);
    }
    // Every line has an outcome (checked before), and only answered lines are in the answers hash.
    const { answered } = await this.records.counts(batch.id);
    await this.resultFiles.write(batch, 'output', answered);
    await this.resultFiles.write(batch, 'error', batch.request_counts.total - answered);
    // A batch that stopped early ends as it stopped (cancelled, expired); any other, completed.
    this.move(batch, { to: batch.stopping ?? 'completed' });
    await this.records.save(batch);
    this.logger.log(`batch ${batch.id} ${batch.status}: ${batch.request_counts.completed} answered, ${batch.request_counts.failed} failed`);
  }
}
