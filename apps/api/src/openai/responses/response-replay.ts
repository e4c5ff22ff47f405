import { Injectable } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { OpenAiError } from '../../errors/openai-error';
import { BackgroundMcpLoops } from './background-mcp-loops';
import { EventLogReplay } from '../common/event-log-replay';
import { SseResponse } from '../common/sse-response';
import { PROMPT_PARAM, StreamedResponse } from './responses-replies';
import { StoredResponses, storedResponseKeys } from './stored-responses';
import type { StoredResponseRecord } from './stored-responses';

/**
 * `GET /v1/responses/{id}?stream=true&starting_after=N` for a background response, on any
 * instance: its event log goes through the same formatter as the request that created it, so
 * every event gets the same sequence number (and frame id) again; those up to N are skipped,
 * then the log is followed live to the end. From the start (no `starting_after`) it is the whole
 * stream, which openai-node's `responses.stream({ response_id })` filters itself.
 */
@Injectable()
export class ResponseReplay {
  constructor(
    private readonly replay: EventLogReplay,
    private readonly stored: StoredResponses,
    private readonly loops: BackgroundMcpLoops,
  ) {}

  async stream(record: StoredResponseRecord, after: number, reply: FastifyReply, signal: AbortSignal): Promise<void> {
    const { id, model } = record.identity;
    const streamed = new StreamedResponse(new SseResponse(reply, undefined, { after }), record.identity);
    // A tool loop's events are in its step log and its turns' logs.
    if (record.loop) return this.loops.follow(record, streamed, signal);
    const gone = OpenAiError.notFound(`The events of response '${id}' are no longer kept; retrieve it without 'stream'.`, 'response_id');
    await this.replay.replay(
      { id, model, log: storedResponseKeys(id).log, gone },
      {
        canRestart: false,
        promptParam: PROMPT_PARAM,
        write: (parts) => streamed.write(parts),
        restart: () => streamed.restart(),
        open: () => streamed.open(),
        // Whoever sees the end first records it; the others find it recorded.
        finish: (ending) =>
          streamed.finish(ending, async ({ state, output }) => void (await this.stored.endIfOpen(record, state, output).catch(() => undefined))),
        fail: (error) => void streamed.fail(error),
      },
      signal,
    );
  }
}
