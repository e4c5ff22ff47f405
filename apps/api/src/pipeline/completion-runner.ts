import { Inject, Injectable, Logger } from '@nestjs/common';
import type { BeforeApplicationShutdown } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import { cancellationsChannel, COMPLETION_JOB_VERSION, CompletionJobName } from '@app/contracts';
import type { CompletionJobData, CompletionJobInput, ReplyTo } from '@app/contracts';
import type { RedisClient } from '@app/redis';
import { OpenAiError } from '../errors/openai-error';
import { COMMANDS_REDIS } from '../redis/api-redis.module';
import { redisUnavailable, shuttingDown } from './completion-admission';
import type { Admission } from './completion-admission';
import { AffinityPlacement } from './affinity-placement';
import { CompletionEventBus } from './completion-event-bus';
import { ExpressLane } from './express-lane';
import type { CompletionSink } from './completion-sink';
import { CompletionWatch } from './completion-watch';
import type { CompletionEnding } from './completion-watch';
import { streamBrokenError } from './event-sequence-tracker';
import type { PlacedJob } from './placed-job';
import { queueFull } from './waiting-limit';

export type { CompletionEnding } from './completion-watch';

const NO_USAGE = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };

/**
 * How a stored completion's events travel besides this instance's channel: logged for a resumed
 * stream, and stopped by its lease (or, answered in the background, never) rather than by its
 * client leaving or this instance going away.
 */
export type DetachedReply = Pick<ReplyTo, 'log' | 'leaseKey' | 'stopWhenUnheard'>;

/**
 * Runs one admitted completion through the queue: listen for its events, then enqueue its job
 * (503 queue_full instead when MAX_WAITING_JOBS wait already), then pass its output to the sink
 * until the end event, whose usage settles the key's token reservation (for every front door).
 * Listening first means no event is ever missed. Whatever ends a request early (client gone, no
 * worker in time, Redis lost, shutdown) also withdraws or cancels its job, so no GPU works for
 * nobody, except a detached (stored) one: its answer is kept for later, and its lease decides how
 * long it runs without a client.
 */
@Injectable()
export class CompletionRunner implements BeforeApplicationShutdown {
  private readonly logger = new Logger(CompletionRunner.name);
  private readonly inFlight = new Set<CompletionWatch>();

  constructor(
    private readonly env: ApiEnv,
    private readonly events: CompletionEventBus,
    private readonly placement: AffinityPlacement,
    private readonly express: ExpressLane,
    @Inject(COMMANDS_REDIS) private readonly commands: RedisClient,
  ) {}

  /**
   * @param signal aborted when the client has gone.
   * @param detached given for a stored completion: the job outlives this request.
   */
  async run(job: CompletionJobInput, admission: Admission, sink: CompletionSink, signal: AbortSignal, detached?: DetachedReply): Promise<CompletionEnding> {
    const { queue } = admission;
    // A client gone already (during admission): an interactive job is never queued; a detached
    // one is queued all the same, for its answer is kept for later.
    const goneBeforeQueued = signal.aborted;
    if (goneBeforeQueued && !detached) {
      admission.abandon();
      throw OpenAiError.clientClosed();
    }
    let placed: PlacedJob;
    try {
      // The express lane (a key under its fair share), the shared queue, or the worker that holds
      // the conversation (prefix-cache affinity). A detached job stays on the shared queue.
      if (admission.fairShare.express && !detached) placed = this.express.place(job, queue);
      else ({ placed } = await this.placement.place(job, queue, detached !== undefined));
    } catch {
      admission.abandon();
      throw redisUnavailable();
    }
    const watch = new CompletionWatch({
      sink,
      startWaitMs: this.env.MAX_QUEUE_WAIT_MS,
      withdraw: () => placed.withdraw(job.id),
    });
    let unsubscribe: () => void;
    try {
      unsubscribe = this.events.listen(job.id, {
        onEvent: (event) => {
          placed.onEvent(event);
          admission.fairShare.onEvent(event);
          watch.onEvent(event);
        },
        onMalformed: () => watch.fail(streamBrokenError()),
        onConnectionLost: () => watch.fail(redisUnavailable()),
      });
    } catch {
      admission.abandon();
      throw redisUnavailable();
    }

    const onClientGone = (): void => watch.fail(OpenAiError.clientClosed());
    signal.addEventListener('abort', onClientGone, { once: true });
    if (goneBeforeQueued) onClientGone();
    this.inFlight.add(watch);
    let ended = false;
    // Unknown until Redis answers the add: a failed add may still have run there.
    let enqueued: boolean | undefined;
    try {
      try {
        const data: CompletionJobData = { v: COMPLETION_JOB_VERSION, ...job, replyTo: { ...this.events.replyTo(), ...detached } };
        const options = { jobId: job.id, ...admission.fairShare.jobOptions };
        enqueued = await placed.add(CompletionJobName.ChatCompletion, data, options, this.env.MAX_WAITING_JOBS);
      } catch (error) {
        admission.abandon();
        this.logger.warn(`enqueue failed: ${error instanceof Error ? error.message : String(error)}`);
        throw redisUnavailable();
      }
      if (!enqueued) {
        admission.abandon();
        throw queueFull(job.model);
      }
      sink.queued?.();
      watch.awaitStart();
      const ending = await watch.ending;
      ended = true;
      admission.tokens.settle(ending.usage);
      return ending;
    } finally {
      signal.removeEventListener('abort', onClientGone);
      this.inFlight.delete(watch);
      unsubscribe();
      // A job its worker failed stays in the queue's failed set for operators; anything else is cancelled.
      if (!ended && enqueued !== false && !watch.workerEndedJob && !detached) this.cancel(placed, job);
      else placed.close();
      // Failed before any output: it generated nothing for its key's token budget (a detached job
      // goes on; one cut short keeps its estimate, its real usage unknown here).
      if (!ended && enqueued === true && !detached && !watch.outputReceived) admission.tokens.settle(NO_USAGE);
      // Its key gets back the fair-share charge of a job that never started (a detached one still may).
      if (!detached) admission.fairShare.release();
    }
  }

  /** Best effort, in the background: drop the job if it waits, stop it if it runs. */
  private cancel(placed: PlacedJob, job: CompletionJobInput): void {
    placed.cancel(job.id);
    this.commands.spublish(cancellationsChannel(job.model), job.id).catch(() => undefined);
  }

  /**
   * SIGTERM (admission already refuses new requests): let open ones finish for
   * SHUTDOWN_DRAIN_MS, then end the rest with an error (their jobs are cancelled) so the HTTP
   * server can close.
   */
  beforeApplicationShutdown(): Promise<void> {
    if (this.inFlight.size === 0) return Promise.resolve();
    this.logger.log(`draining ${this.inFlight.size} open completions for up to ${this.env.SHUTDOWN_DRAIN_MS} ms`);
    const deadline = setTimeout(() => {
      for (const watch of this.inFlight) watch.fail(shuttingDown());
    }, this.env.SHUTDOWN_DRAIN_MS);
    deadline.unref();
    return Promise.resolve();
  }
}
