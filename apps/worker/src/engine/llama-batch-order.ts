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

/**
 * Lets the answers generating at once share one llama.cpp decode step. node-llama-cpp gives each
 * sequence its own KV stream (`kv_unified = false`), and llama.cpp then cuts a batch into one
 * ubatch, a whole pass through the model, per run of consecutive sequence ids in batch order
 * (`split_equal(sequential)` in llama-batch.cpp). node-llama-cpp fills the batch in the order the
 * sequences asked, so eight answers made up to eight passes a step: on an H100 the step's time grew
 * with the number of answers, and on a CPU a step of 8 made ~3.9 passes. In sequence-id order the
 * batch is one pass per run of ids. Reaches into node-llama-cpp's context (3.x) on purpose; if that
 * changes, it returns false and the engine runs as before (the engine's spec checks the order).
 */
export function orderBatchesBySequence(context: LlamaContext): boolean {
  const internals = context as unknown as { _queuedDecodes?: unknown };
  if (!Array.isArray(internals._queuedDecodes) || internals._queuedDecodes.length > 0) return false;
  internals._queuedDecodes = new SequenceOrderedQueue<QueuedDecode>();
  return true;
}
