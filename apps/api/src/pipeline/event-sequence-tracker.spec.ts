import type { TokenEvent } from '@app/contracts';
import { EventSequenceTracker, latestAttemptOutput } from './event-sequence-tracker';

const usage = { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 };
const completionId = 'chatcmpl-1';
const started = (attempt: number): TokenEvent => ({ type: 'started', completionId, attempt, seq: 0, workerId: 'w' });
const delta = (attempt: number, seq: number, text: string): TokenEvent => ({
  type: 'output',
  completionId,
  attempt,
  seq,
  parts: [{ type: 'text', choice: 0, text }],
});
const passed = (text: string) => ({ kind: 'output', parts: [{ type: 'text', choice: 0, text }] });
const end = (attempt: number, seq: number): TokenEvent => ({ type: 'end', completionId, attempt, seq, finishReason: 'stop', usage });

describe('EventSequenceTracker', () => {
  it('passes text on in order and ends with the finish reason and usage', () => {
    const tracker = new EventSequenceTracker();
    expect(tracker.accept(started(1))).toEqual({ kind: 'started' });
    expect(tracker.accept(delta(1, 1, 'Hello'))).toEqual(passed('Hello'));
    expect(tracker.accept({ type: 'heartbeat', completionId, attempt: 1, seq: 2 })).toEqual({ kind: 'none' });
    expect(tracker.accept(delta(1, 3, ' world'))).toEqual(passed(' world'));
    expect(tracker.accept(end(1, 4))).toEqual({ kind: 'end', finishReason: 'stop', usage });
  });

  it('fails on a gap rather than deliver a shorter text', () => {
    const tracker = new EventSequenceTracker();
    tracker.accept(started(1));
    tracker.accept(delta(1, 1, 'a'));
    const result = tracker.accept(delta(1, 3, 'c'));
    expect(result.kind).toBe('failed');
  });

  it('drops an event delivered twice (a publish resent after a reconnect) and goes on', () => {
    const tracker = new EventSequenceTracker();
    tracker.accept(started(1));
    tracker.accept(delta(1, 1, 'a'));
    expect(tracker.accept(started(1))).toEqual({ kind: 'none' });
    expect(tracker.accept(delta(1, 1, 'a'))).toEqual({ kind: 'none' });
    expect(tracker.accept(delta(1, 2, 'b'))).toEqual(passed('b'));
    expect(tracker.accept(end(1, 3))).toEqual({ kind: 'end', finishReason: 'stop', usage });
  });

  it('fails when the first event seen is not the start of an attempt', () => {
    expect(new EventSequenceTracker().accept(delta(1, 1, 'a')).kind).toBe('failed');
  });

  it('accepts a retry that begins before any text was passed on, and ignores the stale attempt', () => {
    const tracker = new EventSequenceTracker();
    tracker.accept(started(1));
    expect(tracker.accept(started(2))).toEqual({ kind: 'started' });
    expect(tracker.accept(delta(1, 1, 'stale'))).toEqual({ kind: 'none' });
    expect(tracker.accept(delta(2, 1, 'fresh'))).toEqual(passed('fresh'));
  });

  it('fails when a new attempt starts after text was already passed on', () => {
    const tracker = new EventSequenceTracker();
    tracker.accept(started(1));
    tracker.accept(delta(1, 1, 'partial'));
    const result = tracker.accept(started(2));
    expect(result.kind).toBe('failed');
  });

  it('turns a worker error into an OpenAI error', () => {
    const tracker = new EventSequenceTracker();
    tracker.accept(started(1));
    const result = tracker.accept({ type: 'error', completionId, attempt: 1, seq: 1, code: 'context_length_exceeded', message: 'too long' });
    expect(result.kind === 'failed' && result.error.toBody()).toEqual({
      error: { message: 'too long', type: 'invalid_request_error', param: 'messages', code: 'context_length_exceeded' },
    });
  });

  it("passes an upstream server's refusal on with its status, type, param and code", () => {
    const tracker = new EventSequenceTracker();
    tracker.accept(started(1));
    const upstream = { status: 422, type: 'invalid_request_error', param: 'response_format', code: 'invalid_schema' };
    const result = tracker.accept({ type: 'error', completionId, attempt: 1, seq: 1, code: 'upstream_rejected', message: 'bad schema', upstream });
    expect(result.kind === 'failed' && result.error.status).toBe(422);
    expect(result.kind === 'failed' && result.error.toBody()).toEqual({
      error: { message: 'bad schema', type: 'invalid_request_error', param: 'response_format', code: 'invalid_schema' },
    });
  });

  it('answers 503 with Retry-After when the upstream server never answered', () => {
    const tracker = new EventSequenceTracker();
    tracker.accept(started(1));
    const result = tracker.accept({ type: 'error', completionId, attempt: 1, seq: 1, code: 'upstream_unavailable', message: 'down' });
    expect(result.kind === 'failed' && [result.error.status, result.error.code, result.error.headers['retry-after']]).toEqual([
      503,
      'upstream_unavailable',
      '5',
    ]);
  });

  it('restarts instead of failing when the consumer can take its text back (a non-stream answer)', () => {
    const tracker = new EventSequenceTracker(true);
    tracker.accept(started(1));
    tracker.accept(delta(1, 1, 'partial'));
    expect(tracker.accept(started(2))).toEqual({ kind: 'restarted' });
    expect(tracker.accept(delta(1, 2, 'stale'))).toEqual({ kind: 'none' });
    expect(tracker.accept(delta(2, 1, 'whole'))).toEqual(passed('whole'));
  });
});

describe('latestAttemptOutput', () => {
  const text = (value: string) => [{ type: 'text', choice: 0, text: value }];

  it("folds a log into its latest attempt's output, dropping a lost worker's and any repeat", () => {
    const log = [started(1), delta(1, 1, 'lost'), started(2), delta(2, 1, 'Hel'), delta(2, 1, 'Hel'), delta(2, 2, 'lo')];
    expect(latestAttemptOutput(log)).toEqual([...text('Hel'), ...text('lo')]);
  });

  it('stops at a gap, keeping what came before it', () => {
    expect(latestAttemptOutput([started(1), delta(1, 1, 'a'), delta(1, 3, 'c')])).toEqual(text('a'));
  });
});
