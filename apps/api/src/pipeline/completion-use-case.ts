import { Injectable } from '@nestjs/common';
import { withTier } from '@app/contracts';
import type { CompletionJobInput, StoreAnswer } from '@app/contracts';
import type { FastifyReply } from 'fastify';
import { toOpenAiError } from '../errors/http-error-mapping';
import { RequestTelemetry } from '../observability/request-telemetry';
import { CompletionAdmission, redisUnavailable } from './completion-admission';
import type { Admission } from './completion-admission';
import { CompletionRunner } from './completion-runner';
import type { CompletionEnding, DetachedReply } from './completion-runner';
import type { CompletionSink } from './completion-sink';
import { ServiceTiers } from './service-tiers';

/** One completion as a front door hands it over: its request mapped to a job, once HTTP has been read. */
export interface CompletionCall {
  job: CompletionJobInput;
  /** The caller's API key id: it owns what is stored, and its tier and limits apply. */
  owner: string;
  /** Aborts when the client leaves; taken before any await, so one leaving during admission counts. */
  clientGone: AbortSignal;
  /** The exchange the request log follows (RequestTelemetry links the completion to it); none for a turn no request follows (a background tool loop's). */
  exchange?: FastifyReply;
  streamed: boolean;
}

/** What keeping a request gives its run: where its worker also writes its answer (`store`) and its events (`reply`). */
export interface KeptRequest {
  store?: StoreAnswer;
  reply?: DetachedReply;
}

/**
 * The parts of the flow that are a front door's own: how it keeps a request, and how its
 * protocol tells the client the output, the ending and the failure. `Kept` is what keeping gave.
 */
export interface FrontDoor<Kept extends KeptRequest> {
  /** Where the output parts go: the door's formatter, buffered or streamed. */
  response: CompletionSink;
  /** Records the request before its job is queued (`store`); absent: nothing is kept. */
  keep?: () => Promise<Kept>;
  /** Hands the admitted job to a run that no request follows (background); undefined: this request follows it. */
  handOff?: (kept: Kept | undefined, admission: Admission) => Promise<void> | undefined;
  /** The run ended: the door sends the rest, and records it. */
  finish: (ending: CompletionEnding, kept: Kept | undefined) => Promise<void>;
  /** The run failed: the door records it and tells the client (rethrown while nothing is on the wire). */
  fail: (error: unknown, kept: Kept | undefined) => Promise<void> | void;
}

/**
 * The use case every front door shares, behind its mapping: the job is admitted (model known,
 * limits, queue room), kept first when the door stores it, tracked, run through the queue, and
 * ended on the door's response. A new door brings its mapper, formatter and routes; nothing here
 * or behind the queue changes. Nothing here reads or writes HTTP.
 */
@Injectable()
export class CompletionUseCase {
  constructor(
    private readonly admission: CompletionAdmission,
    private readonly runner: CompletionRunner,
    private readonly telemetry: RequestTelemetry,
    private readonly tiers: ServiceTiers,
  ) {}

  /** A door's job with the service tier this caller is granted of the one it asked for. */
  withGrantedTier<J extends CompletionJobInput>(job: J, requested: string | undefined, owner: string): J {
    return withTier(job, this.tiers.granted(requested, owner));
  }

  /** admission → (keep) → queue → output parts into the door's response, then its end. */
  async complete<Kept extends KeptRequest>(call: CompletionCall, door: FrontDoor<Kept>): Promise<void> {
    const { job, owner, clientGone, exchange, streamed } = call;
    // From here the runner owns the admission (it gives back what was held on every path).
    const admission = await this.admission.admit(job, owner);
    const kept = door.keep ? await this.keepFirst(door.keep, admission) : undefined;
    if (exchange) this.telemetry.trackCompletion(exchange, job, streamed);
    const handedOff = door.handOff?.(kept, admission);
    if (handedOff) return handedOff;
    let ending: CompletionEnding;
    try {
      const queued = kept?.store ? { ...job, store: kept.store } : job;
      ending = await this.runner.run(queued, admission, door.response, clientGone, kept?.reply);
    } catch (error) {
      if (exchange) this.telemetry.completionFailed(exchange, toOpenAiError(error).code);
      return door.fail(error, kept);
    }
    await door.finish(ending, kept);
  }

  /** Keeps the request before its job is queued; Redis failing here gives the admission back and answers 503. */
  private async keepFirst<Kept>(keep: () => Promise<Kept>, admission: Admission): Promise<Kept> {
    try {
      return await keep();
    } catch {
      admission.abandon();
      throw redisUnavailable();
    }
  }
}
