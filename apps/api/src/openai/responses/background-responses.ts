import { Injectable } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import type { CompletionJobInput, OutputPart } from '@app/contracts';
import type { FastifyReply } from 'fastify';
import type { Admission } from '../../pipeline/completion-admission';
import { CompletionRunner } from '../../pipeline/completion-runner';
import type { CompletionEnding, DetachedReply } from '../../pipeline/completion-runner';
import type { CompletionSink } from '../../pipeline/completion-sink';
import { toOpenAiError } from '../../errors/http-error-mapping';
import { OpenAiError } from '../../errors/openai-error';
import { CancelMessages } from './cancel-messages';
import { responseObject } from './response-object';
import { SseResponse } from '../common/sse-response';
import { PROMPT_PARAM, StreamedResponse } from './responses-replies';
import type { ResponseOutcome } from './responses-replies';
import { OUTCOME_FIELD, ResponseSettlement, stateOfAnswer } from './response-settlement';
import { StoredResponses, storedResponseKeys } from './stored-responses';
import type { StoredResponseRecord } from './stored-responses';

export const cancelledError = (): OpenAiError => new OpenAiError(400, 'invalid_request_error', 'The response was cancelled.', null, 'cancelled');

/** A run of a background job on this instance, and whether a cancel (on any instance) ended it. */
interface BackgroundRun {
  ending: Promise<CompletionEnding>;
  cancelled: () => boolean;
}

/** A background response's output while nobody reads it here: kept to record its end. */
class UnheardOutput implements CompletionSink {
  readonly canRestart = true;
  readonly promptParam = PROMPT_PARAM;
  parts: OutputPart[] = [];
  private wasQueued = false;

  constructor(private readonly onQueued: () => void) {}

  get isQueued(): boolean {
    return this.wasQueued;
  }

  write(parts: OutputPart[]): void {
    this.parts.push(...parts);
  }

  restart(): void {
    this.parts = [];
  }

  queued(): void {
    this.wasQueued = true;
    this.onQueued();
  }
}

/**
 * `background: true`: the job runs on the queue whatever becomes of its request or of this API
 * instance. Its worker appends its events to the response's log (a stream resumed on any
 * instance replays it) and writes its answer, or its failure, beside the record; this instance
 * follows it and records its end, and if this instance dies first, whichever instance next reads
 * the response records it from what the worker wrote (ResponseSettlement).
 */
@Injectable()
export class BackgroundResponses {
  constructor(
    private readonly env: ApiEnv,
    private readonly runner: CompletionRunner,
    private readonly stored: StoredResponses,
    private readonly settlement: ResponseSettlement,
    private readonly cancelMessages: CancelMessages,
  ) {}

  /**
   * `stream: false`: answers with the queued response once its job is queued (or with the HTTP
   * error when it could not be), then follows it to its end in the background.
   */
  async start(job: CompletionJobInput, admission: Admission, record: StoredResponseRecord, reply: FastifyReply): Promise<void> {
    let answerQueued!: () => void;
    const queued = new Promise<void>((resolve) => (answerQueued = resolve));
    const output = new UnheardOutput(() => answerQueued());
    const { ending: run } = this.run(job, admission, output);
    run.catch(() => undefined);
    await Promise.race([queued, run]).catch(async (error: unknown) => {
      // Never queued: the client gets the HTTP error, and nothing is left stored.
      if (!output.isQueued) {
        await this.stored.delete(record).catch(() => undefined);
        throw error;
      }
    });
    await reply.send(responseObject(record.identity, record.state));
    try {
      const ending = await run;
      const { state, output: items } = stateOfAnswer(record, { parts: output.parts, ...ending });
      await this.stored.endIfOpen(record, state, items);
    } catch (error) {
      await this.settlement.current(record, toOpenAiError(error)).catch(() => undefined);
    }
  }

  /**
   * `stream: true`: the request's stream follows the job, its frames numbered as a resumed stream
   * numbers them; a client that leaves does not stop it (nor this instance's following).
   */
  async stream(job: CompletionJobInput, admission: Admission, record: StoredResponseRecord, reply: FastifyReply): Promise<void> {
    const streamed = new StreamedResponse(new SseResponse(reply, undefined, { after: -1 }), record.identity);
    // Its headers go out once the job is queued: an error before then is an HTTP error, any later one an event.
    const sink: CompletionSink = {
      canRestart: false,
      promptParam: PROMPT_PARAM,
      write: (parts) => streamed.write(parts),
      restart: () => streamed.restart(),
      queued: () => streamed.open(),
    };
    const run = this.run(job, admission, sink);
    let ending: CompletionEnding;
    try {
      ending = await run.ending;
    } catch (error) {
      try {
        streamed.fail(run.cancelled() ? cancelledError() : error);
      } catch (unsent) {
        await this.stored.delete(record).catch(() => undefined);
        throw unsent;
      }
      // The job may run on (this instance lost Redis, say): only what the worker wrote decides.
      await this.settlement.current(record, toOpenAiError(error)).catch(() => undefined);
      return;
    }
    await streamed.finish(ending, async ({ state, output }: ResponseOutcome) => {
      await this.stored.endIfOpen(record, state, output).catch(() => undefined);
    });
  }

  /**
   * Nothing stops a background job from this side but its cancel route. A cancel stops a running
   * job through its worker (whose error event ends this run); one still waiting is only taken
   * off its queue, so this run follows the cancel messages (and, once subscribed and then now and
   * then, the response's cancelled mark) and stops following rather than wait out
   * MAX_QUEUE_WAIT_MS (a stream of it would hang that long).
   */
  private run(job: CompletionJobInput, admission: Admission, sink: CompletionSink): BackgroundRun {
    const keys = storedResponseKeys(job.id);
    const store = { key: keys.answer, field: OUTCOME_FIELD, failuresKey: keys.failure, ttlMs: this.stored.keepMs };
    const detached: DetachedReply = {
      stopWhenUnheard: false,
      log: { key: keys.log, keepMs: this.env.RESUME_WINDOW_SECONDS * 1000, maxEvents: this.env.RESUME_MAX_EVENTS },
    };
    const cancel = this.cancelMessages.follow(job.model, job.id);
    const ending = this.runner.run({ ...job, store }, admission, sink, cancel.signal, detached);
    void ending.finally(cancel.stop).catch(() => undefined);
    return { ending, cancelled: () => cancel.signal.aborted };
  }
}
