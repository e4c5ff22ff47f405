import type { BatchRecord, BatchStatus } from './batch-object';
import { IllegalBatchTransitionError, isActive, moveBatch } from './batch-transitions';
import type { BatchTransition } from './batch-transitions';

const NOW = 1_700_000_100;

function batch(status: BatchStatus): BatchRecord {
  return {
    id: 'batch_0123456789abcdefghijklmn',
    object: 'batch',
    endpoint: '/v1/chat/completions',
    errors: null,
    input_file_id: 'file-input',
    completion_window: '24h',
    status,
    output_file_id: null,
    error_file_id: null,
    created_at: 1_700_000_000,
    in_progress_at: null,
    expires_at: 1_700_086_400,
    finalizing_at: null,
    completed_at: null,
    failed_at: null,
    expired_at: null,
    cancelling_at: null,
    cancelled_at: null,
    request_counts: { total: 2, completed: 0, failed: 0 },
    metadata: null,
    owner: 'key-1',
  };
}

const moved = (from: BatchStatus, transition: BatchTransition): BatchRecord => {
  const record = batch(from);
  moveBatch(record, transition, NOW);
  return record;
};

describe('batch transitions', () => {
  it('follows the lifecycle of a batch that completes, stamping when it entered each status', () => {
    const record = batch('validating');
    moveBatch(record, { to: 'in_progress' }, NOW);
    moveBatch(record, { to: 'finalizing' }, NOW + 5);
    moveBatch(record, { to: 'completed' }, NOW + 6);
    expect(record).toMatchObject({
      status: 'completed',
      in_progress_at: NOW,
      finalizing_at: NOW + 5,
      completed_at: NOW + 6,
      failed_at: null,
      cancelled_at: null,
    });
  });

  it('shows a cancel from the time the client asked, and ends cancelled after finalizing', () => {
    const record = moved('in_progress', { to: 'cancelling', requestedAt: NOW - 3 });
    expect(record).toMatchObject({ status: 'cancelling', cancelling_at: NOW - 3 });
    moveBatch(record, { to: 'finalizing' }, NOW);
    moveBatch(record, { to: 'cancelled' }, NOW + 1);
    expect(record).toMatchObject({ status: 'cancelled', finalizing_at: NOW, cancelled_at: NOW + 1 });
  });

  it('ends a batch past its window expired, from finalizing', () => {
    expect(moved('finalizing', { to: 'expired' })).toMatchObject({ status: 'expired', expired_at: NOW });
  });

  it.each<BatchStatus>(['validating', 'in_progress', 'cancelling', 'finalizing'])('fails a %s batch with its errors', (from) => {
    const errors = [{ code: 'input_file_missing', message: 'gone', param: 'input_file_id', line: null }];
    expect(moved(from, { to: 'failed', errors })).toMatchObject({ status: 'failed', failed_at: NOW, errors: { object: 'list', data: errors } });
  });

  it.each<[BatchStatus, BatchTransition]>([
    ['validating', { to: 'finalizing' }],
    ['validating', { to: 'completed' }],
    ['in_progress', { to: 'completed' }],
    ['in_progress', { to: 'in_progress' }],
    ['cancelling', { to: 'in_progress' }],
    ['completed', { to: 'failed', errors: [] }],
    ['cancelled', { to: 'finalizing' }],
    ['failed', { to: 'in_progress' }],
    ['expired', { to: 'completed' }],
  ])('refuses to move a %s batch to %o, leaving it as it was', (from, transition) => {
    const record = batch(from);
    expect(() => moveBatch(record, transition, NOW)).toThrow(IllegalBatchTransitionError);
    expect(record).toEqual(batch(from));
  });

  it('has work left only for an unfinished batch', () => {
    expect(['validating', 'in_progress', 'cancelling', 'finalizing'].every((status) => isActive(status as BatchStatus))).toBe(true);
    expect(['completed', 'failed', 'expired', 'cancelled'].some((status) => isActive(status as BatchStatus))).toBe(false);
  });
});
