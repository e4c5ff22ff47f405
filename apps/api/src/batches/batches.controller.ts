import { Body, Controller, Get, HttpCode, Param, Post, Query, Req, UseGuards } from '@nestjs/common';
import { ApiEnv } from '@app/config';
import { IsIn, IsOptional, IsString, MaxLength } from 'class-validator';
import type { FastifyRequest } from 'fastify';
import { ApiKeyGuard, callerOf } from '../auth/api-key.guard';
import { IsMetadata } from '../openai/common/field-validators';
import { redisUnavailable } from '../pipeline/completion-admission';
import { OpenAiError } from '../errors/openai-error';
import { FilesService } from '../files/files.service';
import { cursorPage, parseCursorQuery } from '../http/cursor-query';
import type { CursorPage } from '../http/cursor-query';
import { isFinished, newBatchId, toBatchObject } from './batch-object';
import type { BatchObject, BatchRecord } from './batch-object';
import { BatchQueue } from './batch-queue';
import { BatchLineDoors } from './batch-line-doors';
import { BatchRecords } from './batch-records';

export class CreateBatchDto {
  @IsString()
  @MaxLength(64)
  input_file_id!: string;

  /** One of the endpoints whose door takes batch lines (BatchLineDoors); checked by the controller. */
  @IsString()
  @MaxLength(256)
  endpoint!: string;

  @IsIn(['24h'], { message: "completion_window must be '24h'" })
  completion_window!: '24h';

  @IsOptional()
  @IsMetadata()
  metadata?: Record<string, string> | null;
}

const notFound = (id: string): OpenAiError => OpenAiError.notFound(`No batch found with id '${id}'.`, 'batch_id', 'batch_not_found');

/** OpenAI's Batch API for the endpoints whose doors take batch lines: create, retrieve, list, cancel; each batch visible to its key only. */
@Controller('v1/batches')
@UseGuards(ApiKeyGuard)
export class BatchesController {
  private readonly retentionMs: number;

  constructor(
    private readonly env: ApiEnv,
    private readonly records: BatchRecords,
    private readonly files: FilesService,
    private readonly batches: BatchQueue,
    private readonly doors: BatchLineDoors,
  ) {
    this.retentionMs = env.BATCH_RETENTION_SECONDS * 1000;
  }

  @Post()
  @HttpCode(200)
  async create(@Body() request: CreateBatchDto, @Req() http: FastifyRequest): Promise<BatchObject> {
    if (!this.doors.has(request.endpoint)) {
      const urls = this.doors.urls.join(', ');
      throw OpenAiError.invalidRequest(
        `Invalid value for 'endpoint': endpoint must be one of ${urls} (the endpoints this service batches)`,
        'endpoint',
        'invalid_value',
      );
    }
    const owner = callerOf(http);
    const input = await this.files.get(owner, request.input_file_id).catch(() => {
      throw OpenAiError.invalidRequest(`No file found with id '${request.input_file_id}'.`, 'input_file_id', 'invalid_value');
    });
    if (input.purpose !== 'batch')
      throw OpenAiError.invalidRequest(`File '${input.id}' was not uploaded with purpose 'batch'.`, 'input_file_id', 'invalid_value');
    const now = Date.now();
    const createdAt = Math.floor(now / 1000);
    const record: BatchRecord = {
      id: newBatchId(now),
      object: 'batch',
      owner,
      endpoint: request.endpoint,
      errors: null,
      input_file_id: input.id,
      completion_window: '24h',
      status: 'validating',
      output_file_id: null,
      error_file_id: null,
      created_at: createdAt,
      in_progress_at: null,
      expires_at: createdAt + this.env.BATCH_COMPLETION_WINDOW_SECONDS,
      finalizing_at: null,
      completed_at: null,
      failed_at: null,
      expired_at: null,
      cancelling_at: null,
      cancelled_at: null,
      request_counts: { total: 0, completed: 0, failed: 0 },
      metadata: request.metadata ?? null,
    };
    await this.records.create(record, this.retentionMs);
    try {
      await this.batches.start(record.id);
    } catch {
      // Nothing would ever run it: it must not stay visible as `validating`.
      await this.records.remove(record).catch(() => undefined);
      throw redisUnavailable();
    }
    return toBatchObject(record, null);
  }

  @Get()
  async list(@Query() query: Record<string, unknown>, @Req() http: FastifyRequest): Promise<CursorPage<BatchObject>> {
    const { after, limit } = parseCursorQuery(query, {});
    const { ids, hasMore } = await this.records.page(callerOf(http), after, limit);
    const data = (await Promise.all(ids.map((id) => this.find(http, id).catch(() => undefined)))).filter((batch) => batch !== undefined);
    return cursorPage(data, hasMore);
  }

  @Get(':id')
  retrieve(@Param('id') id: string, @Req() http: FastifyRequest): Promise<BatchObject> {
    return this.find(http, id);
  }

  /** Cancelling: waiting lines are dropped and running ones stopped; what finished is in the output. */
  @Post(':id/cancel')
  @HttpCode(200)
  async cancel(@Param('id') id: string, @Req() http: FastifyRequest): Promise<BatchObject> {
    const record = await this.records.find(id, callerOf(http));
    if (!record) throw notFound(id);
    if (isFinished(record.status) || record.status === 'finalizing') {
      throw new OpenAiError(409, 'invalid_request_error', `Batch '${id}' is ${record.status} and can no longer be cancelled.`, null, 'batch_not_cancellable');
    }
    await this.records.requestCancel(id, this.retentionMs);
    return toBatchObject(record, await this.records.cancelRequestedAt(id));
  }

  private async find(http: FastifyRequest, id: string): Promise<BatchObject> {
    const record = await this.records.find(id, callerOf(http));
    if (!record) throw notFound(id);
    return toBatchObject(record, await this.records.cancelRequestedAt(id));
  }
}
