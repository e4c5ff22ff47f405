import { Injectable } from '@nestjs/common';
import type { GenerateJobInput, JobInputOf } from '@app/contracts';
import { keeplessDoor, ResultReply } from '../common/buffered-reply';
import { CompletionUseCase } from '../../pipeline/completion-use-case';
import { ModelRegistry } from '../../models/model-registry';
import { ConversationSummary } from './conversation-summary';
import type { Summary, SummaryCall } from './conversation-summary';
import type { CreateResponseDto } from './responses-request.dto';
import { PROMPT_PARAM } from './responses-replies';

/** Without a `compact_threshold`, a conversation is compacted past this share of the model's context. */
export const DEFAULT_THRESHOLD_SHARE = 0.8;

/**
 * Tokens a chat template adds beyond the JSON of its messages and tools (its special tokens are
 * fewer than the JSON's keys and quotes per message, and a tool preamble is a few hundred at most).
 */
const TEMPLATE_ALLOWANCE = 512;

/**
 * More tokens than the job's prompt can render to: a token holds at least one byte of what it
 * renders, and the JSON of the messages and tools holds every byte a template renders of them.
 */
const tokenBound = ({ options }: GenerateJobInput): number =>
  Buffer.byteLength(JSON.stringify(options.messages)) + Buffer.byteLength(JSON.stringify(options.tools ?? null)) + TEMPLATE_ALLOWANCE;

/** A count of the prompt a generation job would render: the worker's chat template renders its messages and tools. */
export function inputTokensJob(mapped: GenerateJobInput, id: string): JobInputOf<'tokenize'> {
  const { messages, tools, thinking } = mapped.options;
  return {
    kind: 'tokenize',
    id,
    model: mapped.model,
    options: { of: 'conversation', conversation: { messages, ...(tools ? { tools } : {}), ...(thinking !== undefined ? { thinking } : {}) } },
    schedule: { acceptedAt: mapped.schedule.acceptedAt, startDeadline: mapped.schedule.startDeadline },
  };
}

/**
 * A create's `context_management: [{type: "compaction", compact_threshold}]`: when the prompt its
 * first job renders reaches the threshold (80% of the model's context when none is given), the
 * conversation is summarised first (ConversationSummary) and the response answers after the
 * compaction item, which leads its output. The prompt is counted by a worker only when it could
 * be over: most requests cost nothing more.
 */
@Injectable()
export class ServerCompaction {
  constructor(
    private readonly completions: CompletionUseCase,
    private readonly models: ModelRegistry,
    private readonly summary: ConversationSummary,
  ) {}

  /** The compaction that should lead the response whose first job is `first`, if its prompt reaches the threshold. */
  async ifOver(request: CreateResponseDto, first: GenerateJobInput, call: Omit<SummaryCall, 'request' | 'jobId'>): Promise<Summary | undefined> {
    const asked = request.context_management?.filter((entry) => entry.type === 'compaction') ?? [];
    if (asked.length === 0) return undefined;
    const given = asked.flatMap((entry) => (typeof entry.compact_threshold === 'number' ? [entry.compact_threshold] : []));
    const threshold = given.length > 0 ? Math.min(...given) : this.defaultThreshold(first.model);
    if (threshold !== undefined && tokenBound(first) < threshold) return undefined;
    const tokens = await this.count(first, call.owner, call.clientGone);
    // The worker that counted is live now, so the default is known after the count if not before.
    const limit = threshold ?? this.defaultThreshold(first.model);
    if (limit === undefined || tokens < limit) return undefined;
    return this.summary.summarise({ ...call, request, jobId: `${first.id}_compaction` });
  }

  /** A final `compaction_trigger`: the conversation before it is summarised, whatever its length. */
  now(request: CreateResponseDto, first: GenerateJobInput, call: Omit<SummaryCall, 'request' | 'jobId'>): Promise<Summary> {
    return this.summary.summarise({ ...call, request, jobId: `${first.id}_compaction` });
  }

  private defaultThreshold(model: string): number | undefined {
    const [worker] = this.models.liveWorkers(model);
    return worker ? Math.floor(worker.contextSize * DEFAULT_THRESHOLD_SHARE) : undefined;
  }

  private async count(first: GenerateJobInput, owner: string, clientGone: AbortSignal): Promise<number> {
    const job = this.completions.withGrantedTier(inputTokensJob(first, `${first.id}_count`), first.schedule.tier, owner);
    const reply = new ResultReply(PROMPT_PARAM, (_, ending) => ending.usage.prompt_tokens);
    await this.completions.complete({ job, owner, clientGone, streamed: false }, keeplessDoor(reply));
    return reply.result();
  }
}
