import { Injectable } from '@nestjs/common';
import { storedCompletionKeys } from '@app/contracts';
import type { StoredCompletionRecord } from '@app/contracts';
import type { FastifyReply } from 'fastify';
import { OpenAiError } from '../../errors/openai-error';
import { EventLogReplay } from '../common/event-log-replay';
import { StreamedChatCompletion } from './chat-replies';
import { formatterOf } from './stored-completion-objects';

/**
 * Serves `GET /v1/chat/completions/{id}?stream=true`: a stored completion's stream, replayed from
 * its event log through the same formatter as the original request (EventLogReplay).
 */
@Injectable()
export class CompletionResumption {
  constructor(private readonly replay: EventLogReplay) {}

  async resume(record: StoredCompletionRecord, afterFrame: number, reply: FastifyReply, signal: AbortSignal): Promise<void> {
    const keys = storedCompletionKeys(record.id);
    const response = new StreamedChatCompletion(reply, formatterOf(record, record.includeUsage), { after: afterFrame });
    const gone = `The stream of completion '${record.id}' can no longer be resumed; retrieve the stored completion instead.`;
    await this.replay.replay(
      { id: record.id, model: record.model, log: keys.log, lease: keys.lease, gone: OpenAiError.notFound(gone, 'completion_id') },
      response,
      signal,
    );
  }
}
