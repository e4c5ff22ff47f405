import { Inject, Injectable } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import type { RedisClient } from '@app/redis';
import { COMMANDS_REDIS } from '../../redis/api-redis.module';
import type { McpCallResult, McpToolInfo } from '../../mcp/mcp-types';
import type { CompletionEnding } from '../../pipeline/completion-runner';
import type { CutShortBy } from './responses-replies';
import type { ResponseOutput } from './responses-formatter';
import { storedResponseKeys } from './stored-responses';

/**
 * What a tool loop did between (and around) its model turns, one step at a time. The output's
 * items and events are a pure function of the steps and the turns' own event logs, so any
 * instance that reads them builds the same response with the same sequence numbers.
 */
export type LoopStep =
  /** A server's tools, listed (or why not): its `mcp_list_tools` item, unless the conversation has one (`unshown`). */
  | { s: 'list'; label: string; tools: McpToolInfo[]; error: string | null; unshown?: true }
  /** A call the client approved (`mcp_approval_response`), about to be made. */
  | { s: 'approved'; id: string; server: string; name: string; arguments: string }
  /** A model turn, queued as job `job`: its events are in that job's log. */
  | { s: 'turn'; job: string }
  /** A call about to be made: logged first, so it is made at most once. */
  | { s: 'calling'; id: string }
  /** A call made, and what it gave. */
  | { s: 'called'; id: string; result: McpCallResult }
  /** The calls of the turn that the response will not make (its bound on calls). */
  | { s: 'abandon' }
  /** The response's end: its turns' usage together, and what cut it short. */
  | { s: 'end'; ending: CompletionEnding; cutShortBy?: CutShortBy }
  /** It failed (a cancel included): the error its stream ends with. */
  | { s: 'fail'; error: { status: number; type: string; message: string; code: string | null } };

/** The steps that change the output between turns (the others are markers of the loop's own). */
export type OutputStep = Extract<LoopStep, { s: 'list' | 'approved' | 'called' | 'abandon' }>;

/** Applies a step that changes the output: what the live loop did, done again by a reader. */
export function applyStep(output: ResponseOutput, step: OutputStep): void {
  switch (step.s) {
    case 'list':
      return step.unshown ? undefined : output.addListTools(step.label, step.tools, step.error);
    case 'approved':
      return void output.addApprovedCall(step.id, step.server, step.name, step.arguments);
    case 'called':
      return output.settleMcpCall(step.id, step.result);
    case 'abandon':
      return output.abandonMcpCalls();
  }
}

/** Where a tool loop's steps are recorded: applied to the output, and for a durable loop logged first. */
export interface LoopSteps {
  take(output: ResponseOutput, step: OutputStep | Extract<LoopStep, { s: 'calling' }>): Promise<void>;
}

/** A loop only its instance follows (not in the background): the steps are applied, and kept nowhere else. */
export const UNLOGGED_STEPS: LoopSteps = {
  take: (output, step) => {
    if (step.s !== 'calling') applyStep(output, step);
    return Promise.resolve();
  },
};

/** Another instance appended a step first, or this one is shutting down: it no longer carries the loop. */
export class LoopTakenOver extends Error {
  constructor(id: string) {
    super(`the tool loop of response ${id} is carried by another instance`);
  }
}

/**
 * Appends a step only where its writer last saw the log end (ARGV[1], '0' for an empty log): a
 * writer whose instance was taken for dead (another carries the loop on) is refused, so it
 * never makes a call or a turn twice. Returns the new entry's id, or false when refused.
 */
const APPEND_AT_TAIL_LUA = `
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local tail = '0'
if #last > 0 then tail = last[1][1] end
if tail ~= ARGV[1] then return false end
local id = redis.call('XADD', KEYS[1], '*', 's', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return id
`;

type WithAppendAtTail = RedisClient & { appendLoopStep(key: string, tail: string, step: string, keepMs: number): Promise<string | null> };

/** A logged step and its entry id. */
export interface LoggedStep {
  entryId: string;
  step: LoopStep;
}

/**
 * Responses' step logs (a Redis Stream each, kept RESUME_WINDOW_SECONDS after its last step, as
 * their turns' event logs are): read by every reader, appended by the one instance carrying a loop.
 */
@Injectable()
export class LoopStepLogs {
  private readonly redis: WithAppendAtTail;
  private readonly keepMs: number;

  constructor(env: ApiEnv, @Inject(COMMANDS_REDIS) redis: RedisClient) {
    redis.defineCommand('appendLoopStep', { numberOfKeys: 1, lua: APPEND_AT_TAIL_LUA });
    this.redis = redis as WithAppendAtTail;
    this.keepMs = env.RESUME_WINDOW_SECONDS * 1000;
  }

  /** Response `id`'s steps after entry `after` ('0': from the start), up to `count`. */
  async read(id: string, after: string, count = 500): Promise<LoggedStep[]> {
    const read = await this.redis.xread('COUNT', count, 'STREAMS', storedResponseKeys(id).steps, after);
    return (read?.[0]?.[1] ?? []).map(([entryId, fields]) => ({ entryId, step: JSON.parse(fields[1]) as LoopStep }));
  }

  /**
   * A writer of response `id`'s steps that appends after `tail` (the last entry its instance read
   * or wrote); once `handingOver` holds (this instance shutting down) it appends nothing more.
   */
  writer(id: string, tail: string, handingOver: () => boolean = () => false): LoopStepWriter {
    return new LoopStepWriter(this.redis, storedResponseKeys(id).steps, this.keepMs, id, tail, handingOver);
  }
}

/** The one instance carrying a loop: each step is logged at the tail it saw, then applied. */
export class LoopStepWriter implements LoopSteps {
  constructor(
    private readonly redis: WithAppendAtTail,
    private readonly key: string,
    private readonly keepMs: number,
    private readonly id: string,
    private tail: string,
    private readonly handingOver: () => boolean,
  ) {}

  async append(step: LoopStep): Promise<void> {
    if (this.handingOver()) throw new LoopTakenOver(this.id);
    const entryId = await this.redis.appendLoopStep(this.key, this.tail, JSON.stringify(step), this.keepMs);
    if (entryId === null) throw new LoopTakenOver(this.id);
    this.tail = entryId;
  }

  async take(output: ResponseOutput, step: OutputStep | Extract<LoopStep, { s: 'calling' }>): Promise<void> {
    await this.append(step);
    if (step.s !== 'calling') applyStep(output, step);
  }
}
