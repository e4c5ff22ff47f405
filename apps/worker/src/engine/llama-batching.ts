import { setImmediate as nextTurn } from 'node:timers/promises';
import type { LlamaContext } from 'node-llama-cpp' with { 'resolution-mode': 'import' };

/** What node-llama-cpp queues for each sequence that waits for the next decode (its internal `_queuedDecodes`). */
interface QueuedDecode {
  readonly sequenceId: number;
}

/** node-llama-cpp's pending decodes, kept in sequence-id order: `push` inserts where the id belongs. */
export class SequenceOrderedQueue<T extends QueuedDecode> extends Array<T> {
  // Arrays that splice() and slice() derive from this one are plain arrays.
  static override get [Symbol.species](): ArrayConstructor {
    return Array;
  }

  override push(...decodes: T[]): number {
    for (const decode of decodes) {
      let at = this.length;
      while (at > 0 && this[at - 1].sequenceId > decode.sequenceId) at--;
      this.splice(at, 0, decode);
    }
    return this.length;
  }
}

/** What a sequence hands node-llama-cpp's context to decode; the batch loop awaits `afterBatchAction` after the batch. */
interface DecodeRequest {
  readonly afterBatchAction?: (sequenceStateLength: number) => unknown;
}

/** The two members of node-llama-cpp's context (3.x) this reaches: its pending decodes and how a sequence queues one. */
interface ContextInternals {
  _queuedDecodes?: unknown;
  _decodeTokens?: unknown;
}

/**
 * Makes the answers generating at once share each llama.cpp decode step, as one pass through the
 * model. Two things stood in the way, both measured (bench:decode-batches):
 * - node-llama-cpp gives each sequence its own KV stream (`kv_unified = false`), and llama.cpp then
 *   cuts a batch into one ubatch, a whole pass, per run of consecutive sequence ids in batch order
 *   (`split_equal(sequential)` in llama-batch.cpp), while node-llama-cpp fills the batch in the
 *   order the sequences asked: 32 answers made ~16 passes a step. Pending decodes are now kept in
 *   sequence-id order.
 * - node-llama-cpp's batch loop decodes again as soon as anything is queued, so a sequence that
 *   fell one step out of phase (it started late) stayed there, decoding alone every other time.
 *   After a batch the loop awaits each of its decodes' `afterBatchAction`; the engine's waits for
 *   the event loop's next turn, by which time every sequence whose token was just sampled has
 *   queued its next decode, so the late one and the others go as one batch. (Waits after one
 *   another: microseconds each when the event loop is idle.)
 * Reaches into node-llama-cpp's context on purpose. If those members are not as expected it
 * changes nothing and returns false (the engine logs it); the engine-batching e2e spec checks both
 * on the installed version.
 */
export function shareDecodeSteps(context: LlamaContext): boolean {
  const internals = context as unknown as ContextInternals;
  const { _queuedDecodes: queued, _decodeTokens: decodeTokens } = internals;
  if (!Array.isArray(queued) || queued.length > 0 || typeof decodeTokens !== 'function') return false;
  internals._queuedDecodes = new SequenceOrderedQueue<QueuedDecode>();
  internals._decodeTokens = (request: DecodeRequest, ...rest: unknown[]): Promise<unknown> => {
    const { afterBatchAction } = request;
    const thenNextTurn = async (length: number) => {
      await afterBatchAction?.(length);
      await nextTurn();
    };
    return (decodeTokens as (...args: unknown[]) => Promise<unknown>).call(context, { ...request, afterBatchAction: thenNextTurn }, ...rest);
  };
  return true;
}
