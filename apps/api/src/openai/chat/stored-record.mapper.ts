import type { GenerateJobInput, StoredCompletionRecord } from '@app/contracts';
import type { ChatCompletionRequestDto } from './chat-request.dto';

/** What a `store: true` request leaves for later: who asked, and what they asked. */
export function storedRecordOf(request: ChatCompletionRequestDto, job: GenerateJobInput, owner: string): StoredCompletionRecord {
  return {
    id: job.id,
    owner,
    model: job.model,
    createdMs: job.schedule.acceptedAt,
    metadata: request.metadata ?? {},
    messages: request.messages,
    choices: job.options.choices ?? 1,
    logprobs: job.options.logprobs !== undefined,
    includeUsage: request.stream_options?.include_usage === true,
    serviceTier: job.schedule.tier,
  };
}
