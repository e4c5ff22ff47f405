import { Injectable } from '@nestjs/common';
import { Readable } from 'node:stream';
import { FilesService } from '../files/files.service';
import { BatchLineDoors } from './batch-line-doors';
import { parseLine } from './batch-lines';
import type { BatchLine } from './batch-lines';
import type { BatchRecord, BatchUsage } from './batch-object';
import { addUsage, fileOf, outputLine } from './batch-output';
import { BatchRecords } from './batch-records';
import type { LineOutcome } from './batch-records';

/** Outcomes read per round trip. */
const CHUNK = 200;

type ChunkLine = { index: number; customId: string; body: Record<string, unknown> };

/** A finished batch's output and error files, in input order, each written in one pass over the input. */
@Injectable()
export class BatchResultFiles {
  constructor(
    private readonly records: BatchRecords,
    private readonly files: FilesService,
    private readonly doors: BatchLineDoors,
  ) {}

  /**
   * One result file, streamed to storage, then its id and the number of lines written in it (and
   * for the output, the usage they add up to) saved with the batch at once: a step tried again
   * (storage away for a moment, a crash) finds the file written and does not write it twice.
   */
  async write(batch: BatchRecord, file: 'output' | 'error', lines: number): Promise<void> {
    const idField = file === 'output' ? 'output_file_id' : 'error_file_id';
    if (batch[idField]) return;
    let written = 0;
    let usage: BatchUsage | undefined;
    if (lines > 0) {
      const body = Readable.from(
        this.lines(batch, file, (outcome) => {
          written++;
          if (file === 'output') usage = addUsage(usage, outcome);
        }),
      );
      batch[idField] = (await this.files.create(batch.owner, { filename: `${batch.id}_${file}.jsonl`, purpose: 'batch_output', body })).id;
    }
    if (file === 'output') batch.usage = usage;
    batch.request_counts = { ...batch.request_counts, [file === 'output' ? 'completed' : 'failed']: written };
    await this.records.save(batch);
  }

  /** The lines of one result file, in input order, read with their outcomes a chunk at a time. */
  private async *lines(batch: BatchRecord, file: 'output' | 'error', counted: (outcome: LineOutcome) => void): AsyncGenerator<string> {
    let chunk: ChunkLine[] = [];
    let index = 0;
    for await (const { line, text } of this.files.lines(batch.owner, batch.input_file_id)) {
      const { customId, body } = parseLine(text, line, batch.endpoint) as BatchLine;
      chunk.push({ index: index++, customId, body });
      if (chunk.length < CHUNK) continue;
      yield* this.chunkLines(batch, file, chunk, counted);
      chunk = [];
    }
    yield* this.chunkLines(batch, file, chunk, counted);
  }

  private async *chunkLines(batch: BatchRecord, file: 'output' | 'error', chunk: ChunkLine[], counted: (outcome: LineOutcome) => void): AsyncGenerator<string> {
    const outcomes = await this.records.outcomes(
      batch.id,
      chunk.map(({ index }) => index),
    );
    const door = this.doors.of(batch.endpoint);
    for (const [position, { index, customId, body }] of chunk.entries()) {
      // Decided before formatting: the other file's lines are not built only to be dropped.
      if (fileOf(outcomes[position]) !== file) continue;
      counted(outcomes[position]);
      yield `${outputLine(batch, index, customId, body, outcomes[position], door)}\n`;
    }
  }
}
