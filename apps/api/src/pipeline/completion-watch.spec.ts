import { OpenAiError } from '../errors/openai-error';
import type { CompletionSink } from './completion-sink';
import { CompletionWatch } from './completion-watch';

const START_WAIT_MS = 30_000;

/** A watch whose start wait is timed by jest's fake clock; `withdraw` says the job was still waiting. */
function setUp() {
  const sink: CompletionSink = { canRestart: false, promptParam: 'messages', write: () => undefined, restart: () => undefined };
  const withdraw = jest.fn(() => Promise.resolve(true));
  return { watch: new CompletionWatch({ sink, startWaitMs: START_WAIT_MS, withdraw }), withdraw };
}

describe('CompletionWatch start wait', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('withdraws a job that no worker starts in time and ends the request with 503', async () => {
    const { watch, withdraw } = setUp();
    watch.awaitStart();
    await jest.advanceTimersByTimeAsync(START_WAIT_MS);
    expect(withdraw).toHaveBeenCalledTimes(1);
    await expect(watch.ending).rejects.toMatchObject({ status: 503 });
  });

  it('arms no timer for a request that failed before its job was queued (client gone during the add)', async () => {
    const { watch, withdraw } = setUp();
    watch.fail(OpenAiError.clientClosed());
    watch.awaitStart();
    // A timer here would hold the finished request for the whole start wait.
    expect(jest.getTimerCount()).toBe(0);
    await jest.advanceTimersByTimeAsync(START_WAIT_MS);
    expect(withdraw).not.toHaveBeenCalled();
    await expect(watch.ending).rejects.toMatchObject({ code: 'client_closed' });
  });
});
