import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query, Req, Res, UseGuards } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import { withTier } from '@app/contracts';
import type { CompletionJobInput } from '@app/contracts';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiKeyGuard, callerOf } from '../auth/api-key.guard';
import { CompletionAdmission, redisUnavailable } from '../completions/completion-admission';
import type { Admission } from '../completions/completion-admission';
import { CompletionRunner } from '../completions/completion-runner';
import type { CompletionEnding } from '../completions/completion-runner';
import { ServiceTiers } from '../completions/service-tiers';
import { toOpenAiError } from '../errors/http-error-mapping';
import { OpenAiError } from '../errors/openai-error';
import { clientGoneSignal } from '../http/client-gone-signal';
import { cursorPage, parseCursorQuery } from '../http/cursor-query';
import type { CursorPage } from '../http/cursor-query';
import { RequestTelemetry } from '../observability/request-telemetry';
import type { ReleaseLease } from '../stored-completions/completion-lease';
import { resumeCursor } from '../stored-completions/stored-completions.controller';
import { CreateResponseDto } from './create-response.dto';
import { newResponseId } from './response-ids';
import { inputItems } from './response-items';
import type { ConversationItem } from './response-items';
import { toResponseJob } from './response-job.mapper';
import { responseObject } from './response-object';
import type { ResponseIdentity } from './response-object';
import { BufferedResponse, StreamedResponse } from './response-replies';
import type { ResponseOutcome, ResponseReply } from './response-replies';
import { BackgroundResponses } from './background-responses';
import { ResponseCancellation } from './response-cancellation';
import { ResponseReplay } from './response-replay';
import { ResponseSettlement } from './response-settlement';
import { StoredResponses, isOpenStatus } from './stored-responses';
import type { StoredResponseRecord } from './stored-responses';

/** What `GET /v1/responses/{id}` reads from its query; `include` and `include_obfuscation` ask for nothing these responses have. */
const RETRIEVE_QUERY = new Set(['include', 'include[]', 'stream', 'starting_after', 'include_obfuscation']);

const notFound = (id: string): OpenAiError => OpenAiError.notFound(`Response with id '${id}' not found.`, 'response_id');

/** OpenAI's `fast` and `ultrafast` are its priority processing. */
const requestedTier = (tier: string | undefined): string | undefined => (tier === 'fast' || tier === 'ultrafast' ? 'priority' : tier);

/**
 * OpenAI's Responses API: the second front door onto the same queue. A request is mapped to the
 * job the chat door queues (response-job.mapper.ts), admitted and run by the same runner, and
 * its output parts are formatted as Response objects and stream events (response-output.ts).
 * Stored responses (`store`, OpenAI's default) live in Redis for every instance to read; a
 * background one runs on whatever becomes of its request (background-responses.ts), and is
 * polled, cancelled and streamed again from any instance.
 */
@Controller('v1/responses')
@UseGuards(ApiKeyGuard)
export class ResponsesController {
  constructor(
    private readonly admission: CompletionAdmission,
    private readonly runner: CompletionRunner,
    private readonly env: ApiEnv,
    private readonly telemetry: RequestTelemetry,
    private readonly tiers: ServiceTiers,
    private readonly stored: StoredResponses,
    private readonly settlement: ResponseSettlement,
    private readonly background: BackgroundResponses,
    private readonly replay: ResponseReplay,
    private readonly cancellation: ResponseCancellation,
  ) {}

  @Post()
  @HttpCode(200)
  async create(@Body() request: CreateResponseDto, @Req() http: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const acceptedAt = Date.now();
    const clientGone = clientGoneSignal(reply);
    const owner = callerOf(http);
    const id = newResponseId(acceptedAt);
    const previous = await this.previous(owner, request.previous_response_id ?? undefined);
    const earlier = previous ? [...previous.history, ...(previous.state.output as ConversationItem[])] : [];
    const input = await inputItems(request.input ?? undefined, (itemId) => this.stored.findItem(owner, itemId));
    const history = [...earlier, ...input];
    const { job: mapped, settings } = toResponseJob(request, history, earlier.length, id, acceptedAt, this.env.MAX_QUEUE_WAIT_MS, previous?.affinityKey);
    const job = withTier(mapped, this.tiers.granted(requestedTier(request.service_tier ?? undefined), owner));
    const identity: ResponseIdentity = { id, model: job.model, createdAtMs: acceptedAt, serviceTier: job.schedule.tier ?? 'default', settings };
    const response = request.stream === true ? new StreamedResponse(reply, identity) : new BufferedResponse(reply, identity);
    const admission = await this.admission.admit(job, owner);
    let record: StoredResponseRecord | undefined;
    // Held while this instance runs a stored response that is not in the background: it lapses if the instance dies.
    let release: ReleaseLease = () => undefined;
    if (settings.store) {
      const { affinityKey } = job.schedule;
      record = {
        owner,
        identity,
        history,
        inputStart: earlier.length,
        state: { status: settings.background ? 'queued' : 'in_progress', output: [] },
        ...(affinityKey ? { affinityKey } : {}),
      };
      release = await this.stored.begin(record).catch(() => {
        admission.abandon();
        throw redisUnavailable();
      });
    }
    this.telemetry.trackCompletion(reply, job, request.stream === true);
    if (record && settings.background) {
      if (request.stream === true) return this.background.stream(job, admission, record, reply);
      return this.background.start(job, admission, record, reply);
    }
    try {
      await this.runInteractive(job, admission, response, clientGone, reply, record);
    } finally {
      release();
    }
  }

  /** A response its request follows to the end: a client that leaves (or an instance that dies) stops its job. */
  private async runInteractive(
    job: CompletionJobInput,
    admission: Admission,
    response: ResponseReply,
    clientGone: AbortSignal,
    reply: FastifyReply,
    record: StoredResponseRecord | undefined,
  ): Promise<void> {
    const keep = async ({ state, output }: ResponseOutcome): Promise<void> => {
      if (record) await this.stored.end(record, state, output).catch(() => undefined);
    };
    let ending: CompletionEnding;
    try {
      ending = await this.runner.run(job, admission, response, clientGone);
    } catch (error) {
      this.telemetry.completionFailed(reply, toOpenAiError(error).code);
      const failed = (): ResponseOutcome => response.fail(error);
      let outcome: ResponseOutcome;
      try {
        outcome = failed();
      } catch (unsent) {
        // Nothing reached the client: the record says it failed, and the client gets the HTTP error.
        if (record) await this.stored.delete(record).catch(() => undefined);
        throw unsent;
      }
      await keep(outcome);
      return;
    }
    await response.finish(ending, keep);
  }

  /** The response as it stands; with `?stream=true` (a background one), its events after `starting_after`, then live to its end. */
  @Get(':id')
  async retrieve(@Param('id') id: string, @Query() query: Record<string, unknown>, @Req() http: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const unknown = Object.keys(query).find((name) => !RETRIEVE_QUERY.has(name));
    if (unknown !== undefined) throw OpenAiError.invalidRequest(`Unrecognized request argument supplied: ${unknown}`, unknown, 'unknown_parameter');
    const { stream, starting_after: startingAfter } = query;
    if (stream !== undefined && stream !== 'true' && stream !== 'false')
      throw OpenAiError.invalidRequest(`'stream' must be true or false.`, 'stream', 'invalid_value');
    const record = await this.find(http, id);
    if (stream !== 'true') {
      await reply.send(responseObject(record.identity, record.state));
      return;
    }
    if (!record.identity.settings.background) {
      throw OpenAiError.invalidRequest(
        `Only a response created with 'background': true can be streamed again; retrieve it without 'stream'.`,
        'stream',
        'invalid_value',
      );
    }
    await this.replay.stream(record, resumeCursor(http.headers['last-event-id'], startingAfter), reply, clientGoneSignal(reply));
  }

  /** Stops a background response (OpenAI allows no other): it ends `cancelled`; one already ended is answered as it is. */
  @Post(':id/cancel')
  @HttpCode(200)
  async cancel(@Param('id') id: string, @Req() http: FastifyRequest): Promise<object> {
    const record = await this.find(http, id);
    if (!record.identity.settings.background) throw OpenAiError.invalidRequest('Cannot cancel a synchronous response.', 'response_id', 'invalid_value');
    const cancelled = isOpenStatus(record.state.status) ? await this.cancellation.cancel(record) : record;
    if (!cancelled) throw notFound(id);
    return responseObject(cancelled.identity, cancelled.state);
  }

  @Delete(':id')
  async remove(@Param('id') id: string, @Req() http: FastifyRequest): Promise<{ id: string; object: 'response'; deleted: true }> {
    await this.stored.delete(await this.find(http, id));
    return { id, object: 'response', deleted: true };
  }

  @Get(':id/input_items')
  async inputItems(@Param('id') id: string, @Query() query: Record<string, unknown>, @Req() http: FastifyRequest): Promise<CursorPage<ConversationItem>> {
    // `include` asks for image URLs and the like, which text items do not have.
    const listQuery = Object.fromEntries(Object.entries(query).filter(([name]) => name !== 'include' && name !== 'include[]'));
    const { after, limit, order } = parseCursorQuery(listQuery, { order: true }, 'desc');
    const record = await this.find(http, id);
    const own = record.history.slice(record.inputStart);
    const ordered = order === 'asc' ? own : [...own].reverse();
    const afterIndex = after === undefined ? -1 : ordered.findIndex((item) => item.id === after);
    if (after !== undefined && afterIndex < 0) throw OpenAiError.invalidRequest(`No input item with id '${after}' in this response.`, 'after', 'invalid_value');
    const start = afterIndex + 1;
    return cursorPage(ordered.slice(start, start + limit), start + limit < ordered.length);
  }

  /** The response a `previous_response_id` continues (its history, then its output, come before the input). */
  private async previous(owner: string, previousId: string | undefined): Promise<StoredResponseRecord | undefined> {
    if (previousId === undefined) return undefined;
    const found = await this.stored.find(owner, previousId);
    const previous = found && (await this.settlement.current(found));
    if (!previous) throw OpenAiError.notFound(`Previous response with id '${previousId}' not found.`, 'previous_response_id', 'previous_response_not_found');
    if (previous.state.status === 'queued' || previous.state.status === 'in_progress') {
      throw OpenAiError.invalidRequest(`Previous response with id '${previousId}' is still in progress.`, 'previous_response_id', 'invalid_value');
    }
    return previous;
  }

  /** The caller's response as it truly stands (see ResponseSettlement). */
  private async find(http: FastifyRequest, id: string): Promise<StoredResponseRecord> {
    const found = await this.stored.find(callerOf(http), id);
    const record = found && (await this.settlement.current(found));
    if (!record) throw notFound(id);
    return record;
  }
}
