import type { OutputPart } from '@app/contracts';
import type { FastifyReply } from 'fastify';
import type { CompletionEnding } from '../../pipeline/completion-runner';
import type { CompletionSink } from '../../pipeline/completion-sink';
import type { FrontDoor, KeptRequest } from '../../pipeline/completion-use-case';

/** The client's side of one request: where its output goes and how it ends (a JSON body or a stream). */
export interface DoorReply extends CompletionSink {
  /** Sends the rest of the answer once the completion has ended. */
  finish(ending: CompletionEnding): Promise<void>;
  /**
   * Reports a failure: rethrown while nothing is on the wire (the exception filter answers with
   * a plain HTTP error), else sent as a final `data: {"error": ...}` event before `[DONE]`.
   */
  fail(error: unknown): void;
}

/**
 * A reply sent whole once the completion has ended (`stream: false`): nothing is on the wire
 * before then, so a worker lost mid-answer is retried without the client noticing, and the
 * parts received so far are simply dropped.
 */
export abstract class BufferedReply implements CompletionSink {
  readonly canRestart = true;
  abstract readonly promptParam: string;
  /** Parts as they come (the publisher merged what it could); the door's formatter builds the answer from them. */
  protected parts: OutputPart[] = [];

  write(parts: OutputPart[]): void {
    this.parts.push(...parts);
  }

  restart(): void {
    this.parts = [];
  }

  /** Nothing is on the wire yet: the failure is rethrown, and the exception filter answers it as an HTTP error. */
  fail(error: unknown): never {
    throw error;
  }
}

/** A reply whose whole answer is one body made of the parts and how the job ended (embeddings, a rerank, a legacy completion). */
export class FormattedReply extends BufferedReply {
  /**
   * @param promptParam what a failure about the door's input names
   * @param body the door's formatter: its answer, or a throw when the parts cannot make one
   */
  constructor(
    private readonly reply: FastifyReply,
    readonly promptParam: string,
    private readonly body: (parts: OutputPart[], ending: CompletionEnding) => unknown,
  ) {
    super();
  }

  async finish(ending: CompletionEnding): Promise<void> {
    await this.reply.send(this.body(this.parts, ending));
  }
}

/** A reply the service keeps for itself (a pass it runs for a request: a count, a summary): its body is the result. */
export class ResultReply<Result> extends BufferedReply {
  private made: { result: Result } | undefined;

  constructor(
    readonly promptParam: string,
    private readonly body: (parts: OutputPart[], ending: CompletionEnding) => Result,
  ) {
    super();
  }

  finish(ending: CompletionEnding): Promise<void> {
    this.made = { result: this.body(this.parts, ending) };
    return Promise.resolve();
  }

  /** The result, once the run has finished. */
  result(): Result {
    if (!this.made) throw new Error('the pass has not finished');
    return this.made.result;
  }
}

/**
 * A door that keeps nothing: the reply (one body, or a stream) is the response, its finish the
 * run's end, its failure the run's (embeddings, rerank, token counts, legacy completions).
 */
export function keeplessDoor(reply: DoorReply): FrontDoor<KeptRequest> {
  return { response: reply, fail: (error) => reply.fail(error), finish: (ending) => reply.finish(ending) };
}
