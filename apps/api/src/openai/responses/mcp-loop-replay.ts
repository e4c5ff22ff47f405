import { Inject, Injectable } from '@nestjs/common';
import type { CompletionUsage } from '@app/contracts';
import type { RedisClient } from '@app/redis';
import { setTimeout as sleep } from 'node:timers/promises';
import type { CompletionEnding } from '../../pipeline/completion-runner';
import { CompletionQueues } from '../../pipeline/completion-queues';
import { COMMANDS_REDIS } from '../../redis/api-redis.module';
import { OpenAiError } from '../../errors/openai-error';
import { EventLogReplay } from '../common/event-log-replay';
import { applyStep, LoopStepLogs } from './mcp-loop-steps';
import type { LoopStep } from './mcp-loop-steps';
import type { LoggedList } from './mcp-tool-loop';
import { addedUsage, PROMPT_PARAM } from './responses-replies';
import type { ResponseOutcome, ResponseReply } from './responses-replies';
import { isOpenStatus, storedResponseKeys } from './stored-responses';
import type { StoredResponseRecord } from './stored-responses';

/** How often a follower reads new steps while the loop makes a call. */
const POLL_MS = 20;
/** A turn's job is queued this soon after its step is logged, unless the instance queuing it died. */
const TURN_QUEUED_WITHIN_MS = 10_000;
/** How often a follower that sees no new step asks whether the response is still open (its loop may have died for good). */
const LIVENESS_CHECK_MS = 2000;

/** Where a replay of a loop stopped: what the instance carrying it on needs. */
export interface LoopPosition {
  /** The last step's entry id ('0': none): the next is appended after it. */
  tail: string;
  /** The last step was a turn: how it ended (the loop goes on from after it). */
  turnEnding?: CompletionEnding;
  turns: number;
  /** The turns' usage together. */
  usage?: CompletionUsage;
  /** Calls made or begun (towards the bound). */
  calls: number;
  /** Calls begun and never settled: their instance died during them. */
  interrupted: string[];
  /** Calls settled since the last turn (the next turn is owed to them). */
  settledSinceTurn: number;
  listed: Map<string, LoggedList>;
  abandoned: boolean;
  /** An `end` or `fail` step was replayed: the response has ended. */
  ended: boolean;
}

/** How a replay goes on at the log's tail, and who records the response's end when it meets it. */
export interface ReplayOptions {
  /** A client's stream: waits for further steps until the end (else stops at the tail). */
  follow: boolean;
  /** Called with the outcome at the `end` or `fail` step (whoever meets it first records it). */
  recordEnd: (outcome: ResponseOutcome) => Promise<void>;
  /** While following: whether the response is still open (false: its loop ended without a last step). */
  stillOpen?: () => Promise<StoredResponseRecord | undefined>;
}

const endError = (step: Extract<LoopStep, { s: 'fail' }>): OpenAiError =>
  new OpenAiError(step.error.status, step.error.type, step.error.message, null, step.error.code);

/** Applies the response's last step: its end, or its failure. */
export async function applyEnd(reply: ResponseReply, step: Extract<LoopStep, { s: 'end' | 'fail' }>, recordEnd: ReplayOptions['recordEnd']): Promise<void> {
  if (step.s === 'end') return reply.finish(step.ending, recordEnd, step.cutShortBy);
  await recordEnd(reply.fail(endError(step)));
}

/**
 * A background tool loop's response, built again from its step log and its turns' event logs:
 * the same items and events (sequence numbers included) as the instance carrying it built, into
 * any reply. A client's stream follows it to its end; the instance that takes the loop on after
 * another died replays it to the tail and goes on from there.
 */
@Injectable()
export class LoopReplay {
  constructor(
    private readonly steps: LoopStepLogs,
    private readonly eventLog: EventLogReplay,
    private readonly queues: CompletionQueues,
    @Inject(COMMANDS_REDIS) private readonly redis: RedisClient,
  ) {}

  async replay(record: StoredResponseRecord, reply: ResponseReply, signal: AbortSignal, options: ReplayOptions): Promise<LoopPosition> {
    const { id } = record.identity;
    const position: LoopPosition = { tail: '0', turns: 0, calls: 0, interrupted: [], settledSinceTurn: 0, listed: new Map(), abandoned: false, ended: false };
    let quietSince = Date.now();
    while (!position.ended) {
      if (signal.aborted) throw OpenAiError.clientClosed();
      const logged = await this.steps.read(id, position.tail);
      for (const { entryId, step } of logged) {
        await this.apply(record, reply, position, step, signal, options);
        position.tail = entryId;
        if (position.ended) break;
      }
      if (logged.length > 0) quietSince = Date.now();
      else if (!options.follow) break;
      else if (options.stillOpen && Date.now() - quietSince > LIVENESS_CHECK_MS) {
        quietSince = Date.now();
        const current = await options.stillOpen();
        if (current === undefined || !isOpenStatus(current.state.status)) {
          // One last read: the end step may have landed just before the record's end.
          if ((await this.steps.read(id, position.tail)).length > 0) continue;
          throw endedUnlogged(current);
        }
      } else await sleep(POLL_MS);
    }
    return position;
  }

  private async apply(
    record: StoredResponseRecord,
    reply: ResponseReply,
    at: LoopPosition,
    step: LoopStep,
    signal: AbortSignal,
    options: ReplayOptions,
  ): Promise<void> {
    switch (step.s) {
      case 'turn': {
        const ending = await this.turn(record, step.job, reply, signal);
        Object.assign(at, { turnEnding: ending, usage: addedUsage(at.usage, ending.usage), settledSinceTurn: 0 });
        at.turns++;
        return;
      }
      case 'end':
      case 'fail':
        at.ended = true;
        return applyEnd(reply, step, options.recordEnd);
      case 'calling':
        at.turnEnding = undefined;
        at.calls++;
        at.interrupted.push(step.id);
        return;
    }
    at.turnEnding = undefined;
    if (step.s === 'list') at.listed.set(step.label, { tools: step.tools, error: step.error });
    if (step.s === 'abandon') at.abandoned = true;
    if (step.s === 'called') {
      at.interrupted = at.interrupted.filter((begun) => begun !== step.id);
      at.settledSinceTurn++;
    }
    applyStep(reply.betweenTurns(), step);
  }

  /** A model turn's events from its job's log (followed live while it runs), into the reply; its ending. */
  private async turn(record: StoredResponseRecord, job: string, reply: ResponseReply, signal: AbortSignal): Promise<CompletionEnding> {
    await this.untilQueued(record.identity.model, job, signal);
    const gone = OpenAiError.notFound(`The events of response '${record.identity.id}' are no longer kept; retrieve it without 'stream'.`, 'response_id');
    return new Promise<CompletionEnding>((resolve, reject) => {
      this.eventLog
        .replay(
          { id: job, model: record.identity.model, log: storedResponseKeys(job).log, gone },
          {
            canRestart: reply.canRestart,
            promptParam: PROMPT_PARAM,
            write: (parts) => reply.write(parts),
            restart: () => reply.restart(),
            // The reply's stream was opened once, before the first step.
            open: () => undefined,
            finish: (ending) => Promise.resolve(resolve(ending)),
            fail: reject,
          },
          signal,
        )
        .catch(reject);
    });
  }

  /** A turn's step is logged just before its job is queued: a reader that comes between waits for the job (or its log). */
  private async untilQueued(model: string, job: string, signal: AbortSignal): Promise<void> {
    const deadline = Date.now() + TURN_QUEUED_WITHIN_MS;
    while (Date.now() < deadline && !signal.aborted) {
      const [logged, state] = await Promise.all([this.redis.exists(storedResponseKeys(job).log), this.queues.forModel(model).getJobState(job)]);
      if (logged === 1 || state !== 'unknown') return;
      await sleep(POLL_MS);
    }
  }
}

/** The response ended (cancelled, or its loop failed for good) with no last step for its stream. */
function endedUnlogged(current: StoredResponseRecord | undefined): OpenAiError {
  if (current?.state.status === 'cancelled') return new OpenAiError(400, 'invalid_request_error', 'The response was cancelled.', null, 'cancelled');
  return OpenAiError.internal(current?.state.error?.message ?? 'The response ended without an answer.');
}
