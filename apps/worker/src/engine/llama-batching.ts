import { setImmediate as nextTurn } from 'node:timers/promises';
import type { LlamaContext, LlamaContextSequence } from 'node-llama-cpp' with { 'resolution-mode': 'import' };

/** What node-llama-cpp queues for each sequence that waits for the next decode (its internal `_queuedDecodes`). */
interface QueuedDecode {
  readonly sequenceId: number;
}

/**
 * node-llama-cpp's pending decodes, kept in sequence-id order: `push` inserts where the id belongs.
 * `takeOuts` counts node-llama-cpp's removals (it takes decodes out to form each batch).
 */
export class SequenceOrderedQueue<T extends QueuedDecode> extends Array<T> {
  takeOuts = 0;

  // Arrays that splice() and slice() derive from this one are plain arrays.
  static override get [Symbol.species](): ArrayConstructor {
    return Array;
  }

  override push(...decodes: T[]): number {
    for (const decode of decodes) {
      let at = this.length;
      while (at > 0 && this[at - 1].sequenceId > decode.sequenceId) at--;
      super.splice(at, 0, decode);
    }
    return this.length;
  }

  override splice(start: number, deleteCount?: number, ...items: T[]): T[] {
    this.takeOuts++;
    return deleteCount === undefined ? super.splice(start) : super.splice(start, deleteCount, ...items);
  }
}

/** What a sequence hands node-llama-cpp's context to decode; the batch loop awaits `afterBatchAction` after the batch. */
interface DecodeRequest {
  readonly sequenceId: number;
  readonly afterBatchAction?: (sequenceStateLength: number) => unknown;
}

type AsyncMethod = (...args: unknown[]) => Promise<unknown>;

/** The members of node-llama-cpp's context (3.x) this reaches: its pending decodes and how a sequence queues one. */
interface ContextInternals {
  _queuedDecodes?: unknown;
  _decodeTokens?: unknown;
}

/** A sequence's methods (node-llama-cpp 3.x) that take the context's lock: erasing its tokens, and checkpoints. */
const LOCKING_METHODS = ['_eraseContextTokenRanges', 'takeCheckpoint', '_takeNamedCheckpoint'] as const;

/**
 * Makes the answers generating at once share each llama.cpp decode step, as one pass through the
 * model, without keeping a sequence that must clear its old state waiting. Three things stood in
 * the way, all measured (bench:decode-batches, test/engine-batching.e2e-spec.ts):
 * - node-llama-cpp gives each sequence its own KV stream (`kv_unified = false`), and llama.cpp then
 *   cuts a batch into one ubatch, a whole pass, per run of consecutive sequence ids in batch order
 *   (`split_equal(sequential)` in llama-batch.cpp), while node-llama-cpp fills the batch in the
 *   order the sequences asked: 32 answers made ~14 passes a step. Pending decodes are now kept in
 *   sequence-id order.
 * - node-llama-cpp's batch loop decodes again as soon as anything is queued, so a sequence that
 *   fell one step out of phase (it started late) stayed there, decoding alone every other time.
 *   After a batch the loop awaits each of its decodes' `afterBatchAction`. When a decode is
 *   queued already (the late one), the first of them waits for the event loop's next turn, by
 *   which time the sequences just sampled have queued theirs too: they go as one batch.
 * - The loop holds the context's lock while anything is queued, which is always while answers
 *   generate, and a sequence needs that lock to erase tokens (a new job clearing another
 *   conversation, the end of a job, scoring) or take a checkpoint: it waited until every answer
 *   had ended (53 steps in the spec). While one of those waits, the other sequences' next decodes
 *   are held back, so the loop ends its step and lets go; they go on, in one batch, once it is done.
 * Reaches into node-llama-cpp's context and sequences on purpose. If those members are not as
 * expected it changes nothing and returns false (the engine logs it); the engine-batching e2e
 * spec checks all three on the installed version. Call it before anything is decoded.
 */
export function shareDecodeSteps(context: LlamaContext, sequences: readonly LlamaContextSequence[]): boolean {
  const internals = context as unknown as ContextInternals;
  const { _queuedDecodes: queued, _decodeTokens: decodeTokens } = internals;
  if (!Array.isArray(queued) || queued.length > 0 || typeof decodeTokens !== 'function') return false;
  const sequenceInternals = sequences.map((sequence) => sequence as unknown as Record<string, unknown>);
  const wellKnown = (sequence: Record<string, unknown>) =>
    typeof sequence._sequenceId === 'number' && LOCKING_METHODS.every((name) => typeof sequence[name] === 'function');
  if (!sequenceInternals.every(wellKnown)) return false;
  const steps = new SharedDecodeSteps((decodeTokens as AsyncMethod).bind(context));
  internals._queuedDecodes = steps.queue;
  internals._decodeTokens = (request: DecodeRequest, ...rest: unknown[]) => steps.decode(request, rest);
  for (const sequence of sequenceInternals) steps.holdOthersWhileLocking(sequence);
  return true;
}

/** Undoes shareDecodeSteps between runs (nothing queued): the context and sequences batch as node-llama-cpp ships them. */
export function plainDecodeSteps(context: LlamaContext, sequences: readonly LlamaContextSequence[]): void {
  const internals = context as unknown as ContextInternals;
  internals._queuedDecodes = [];
  // What shareDecodeSteps set on the objects hides their prototypes' methods: deleting it shows them again.
  delete internals._decodeTokens;
  for (const sequence of sequences) for (const name of LOCKING_METHODS) delete (sequence as unknown as Record<string, unknown>)[name];
}

class SharedDecodeSteps {
  readonly queue = new SequenceOrderedQueue<QueuedDecode>();
  /** Sequences waiting for the context's lock or holding it; the others' decodes wait meanwhile. */
  private readonly clearing = new Map<number, number>();
  private clearingDone = Promise.resolve();
  private endClearing = (): void => undefined;
  private waitedAfter: number | undefined;

  constructor(private readonly decodeTokens: AsyncMethod) {}

  /** Holds the other sequences' decodes back whenever this one waits for the context's lock or holds it. */
  holdOthersWhileLocking(internals: Record<string, unknown>): void {
    const id = internals._sequenceId as number;
    for (const name of LOCKING_METHODS) {
      const method = (internals[name] as AsyncMethod).bind(internals);
      internals[name] = async (...args: unknown[]) => {
        this.startClearing(id);
        try {
          return await method(...args);
        } finally {
          this.stopClearing(id);
        }
      };
    }
  }

  private startClearing(id: number): void {
    if (this.clearing.size === 0) this.clearingDone = new Promise((resolve) => (this.endClearing = resolve));
    this.clearing.set(id, (this.clearing.get(id) ?? 0) + 1);
  }

  private stopClearing(id: number): void {
    const count = (this.clearing.get(id) ?? 1) - 1;
    if (count > 0) this.clearing.set(id, count);
    else this.clearing.delete(id);
    if (this.clearing.size === 0) this.endClearing();
  }

  async decode(request: DecodeRequest, rest: unknown[]): Promise<unknown> {
    // A clearing sequence's own decodes go on: an erase may evaluate its tokens again.
    while (this.clearing.size > 0 && !this.clearing.has(request.sequenceId)) await this.clearingDone;
    const { afterBatchAction: own } = request;
    // Per token: a new function only for the rare sequence that has an action of its own.
    const afterBatchAction = own
      ? async (length: number) => {
          await own(length);
          await this.joinLateOnes();
        }
      : this.joinLateOnes;
    return this.decodeTokens({ ...request, afterBatchAction }, ...rest);
  }

  /** Once per batch, and only when a decode is queued already: waits for the sequences just sampled to queue theirs. */
  private readonly joinLateOnes = async (): Promise<void> => {
    if (this.queue.length === 0 || this.waitedAfter === this.queue.takeOuts) return;
    this.waitedAfter = this.queue.takeOuts;
    await nextTurn();
  };
}
