import { Injectable } from '@nestjs/common';
import { newResponseId } from './response-ids';
import type { ResponseIdentity } from './response-object';
import { StreamedResponse } from './responses-replies';
import { ResponsesService } from './responses.service';
import type { CreateResponseCall } from './responses.service';
import { StoredResponses } from './stored-responses';
import type { StoredResponseRecord } from './stored-responses';
import type { SocketTurn } from './socket-turn';

/**
 * `response.create` with `generate: false` (OpenAI's warm-up): the request's state is prepared as
 * creating it would (the conversation it continues, its input, its settings) and the response ends
 * at once, completed with no output and no model run. Its id is a `previous_response_id` for the
 * next turn: on this connection always, on any connection when it is stored.
 */
@Injectable()
export class ResponseWarmUp {
  constructor(
    private readonly responses: ResponsesService,
    private readonly stored: StoredResponses,
  ) {}

  async prepare({ request, owner, acceptedAt, clientGone, socket }: CreateResponseCall & { socket: SocketTurn }): Promise<void> {
    const id = newResponseId(acceptedAt);
    const { earlier, history, job, settings } = await this.responses.mapped(request, owner, id, acceptedAt, clientGone, socket);
    const identity: ResponseIdentity = { id, model: job.model, createdAtMs: acceptedAt, serviceTier: 'default', settings };
    const record: StoredResponseRecord = { owner, identity, history, inputStart: earlier.length, state: { status: 'in_progress', output: [] } };
    const response = new StreamedResponse(socket.events, identity);
    await response.prepared(async ({ state }) => {
      if (settings.store) {
        const release = await this.stored.begin(record);
        try {
          await this.stored.end(record, state, []);
        } finally {
          release();
        }
      }
      socket.remember({ ...record, state });
    });
  }
}
