import { Inject, Injectable } from '@nestjs/common';
import { isCompletionFailure, parseChecked, storedAnswerCheck } from '@app/contracts';
import type { StoredAnswer } from '@app/contracts';
import type { RedisClient } from '@app/redis';
import { COMMANDS_REDIS } from '../../redis/api-redis.module';
import { CompletionQueues, isInProgress } from '../../pipeline/completion-queues';
import type { ConversationItem } from './response-items';
import type { ResponseState } from './response-object';
import { ResponseOutput } from './responses-formatter';
import { endedState } from './responses-replies';
import { ResponseLoopQueue } from './response-loop-queue';
import { StoredResponses, isOpenStatus, storedResponseKeys } from './stored-responses';
import type { StoredResponseRecord } from './stored-responses';

/** The hash field under which a background job's worker writes its answer (or its failure). */
export const OUTCOME_FIELD = 'outcome';

/**
 * A job not found this soon after its record was written may still be on its way to the queue
 * (the record is written first): only later does "no job, no answer" mean it never ran.
 */
const ENQUEUE_GRACE_MS = 10_000;

/** The state a worker's stored answer stands for: the same items the live stream built. */
export function stateOfAnswer(record: StoredResponseRecord, answer: StoredAnswer): { state: ResponseState; output: ConversationItem[] } {
  const built = new ResponseOutput(record.identity.id, record.identity.settings);
  built.add(answer.parts);
  const output = built.finish(answer.finishReason === 'length');
  return { state: endedState(output, answer), output };
}

const failed = (message: string, code = 'server_error'): ResponseState => ({ status: 'failed', output: [], error: { code, message } });

/**
 * Tells how a stored response truly stands when the record still says it is open, and records
 * that if it has ended. The instance that created a response records its end itself; this covers
 * an instance that died (or lost Redis) first, so that no reader is told `in_progress` forever:
 * - a background response's job runs on whatever happens to its instance, and its worker writes
 *   the answer (or the failure) beside the record: that, or the job's state in the queue, decides;
 * - any other response runs only while its instance follows it, and that instance holds the
 *   response's lease meanwhile: a lapsed lease on an open record means the instance is gone.
 */
@Injectable()
export class ResponseSettlement {
  constructor(
    private readonly stored: StoredResponses,
    private readonly queues: CompletionQueues,
    private readonly loops: ResponseLoopQueue,
    @Inject(COMMANDS_REDIS) private readonly redis: RedisClient,
  ) {}

  /** The record as it stands (recording an ending found); undefined when it was deleted meanwhile. */
  async current(record: StoredResponseRecord, failure?: { message: string }): Promise<StoredResponseRecord | undefined> {
    if (!isOpenStatus(record.state.status)) return record;
    const keys = storedResponseKeys(record.identity.id);
    if (record.loop) return this.currentLoop(record, failure);
    if (!record.identity.settings.background) {
      if ((await this.redis.exists(keys.lease)) === 1) return record;
      return this.stored.endIfOpen(record, failed(failure?.message ?? 'The API instance serving this response stopped before it ended; create it again.'), []);
    }
    // The job's state first: a job seen ended has written its answer already, so the answer read next is final.
    const jobState = await this.queues.forModel(record.identity.model).getJobState(record.identity.id);
    const [answerJson, failureJson] = await Promise.all([this.redis.hget(keys.answer, OUTCOME_FIELD), this.redis.hget(keys.failure, OUTCOME_FIELD)]);
    if (answerJson !== null) {
      const { state, output } = stateOfAnswer(record, parseChecked<StoredAnswer>(answerJson, storedAnswerCheck, 'stored response answer'));
      return this.stored.endIfOpen(record, state, output);
    }
    if (failureJson !== null) {
      const workerFailure: unknown = JSON.parse(failureJson);
      if (isCompletionFailure(workerFailure)) {
        const state: ResponseState = workerFailure.code === 'cancelled' ? { status: 'cancelled', output: [] } : failed(workerFailure.message);
        return this.stored.endIfOpen(record, state, []);
      }
    }
    if (isInProgress(jobState)) return { ...record, state: { ...record.state, status: jobState === 'active' ? 'in_progress' : 'queued' } };
    if (jobState === 'unknown' && Date.now() - record.identity.createdAtMs < ENQUEUE_GRACE_MS && failure === undefined) return record;
    return this.stored.endIfOpen(record, failed(failure?.message ?? 'The response ended without an answer.'), []);
  }

  /**
   * A background tool loop runs while its job on the loops' queue does (whichever instance carries
   * it), and records its end before that job completes: a job gone with the record still open failed for good.
   */
  private async currentLoop(record: StoredResponseRecord, failure?: { message: string }): Promise<StoredResponseRecord | undefined> {
    const { id, createdAtMs } = record.identity;
    const jobState = await this.loops.queue.getJobState(id);
    if (isInProgress(jobState)) return { ...record, state: { ...record.state, status: jobState === 'active' ? 'in_progress' : 'queued' } };
    if (jobState === 'unknown' && Date.now() - createdAtMs < ENQUEUE_GRACE_MS && failure === undefined) return record;
    const latest = await this.stored.find(record.owner, id);
    if (latest === undefined || !isOpenStatus(latest.state.status)) return latest;
    return this.stored.endIfOpen(record, failed(failure?.message ?? "The response's tool loop stopped without an answer."), []);
  }
}
