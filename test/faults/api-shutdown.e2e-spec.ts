import { assertMatchesSchema } from '../support/openai-schema';
import { STACK_API_KEY, STACK_MODEL, ServiceStack, waitFor } from '../support/service-stack';
import { longRequest, postChat, readStream } from '../support/chat-requests';
import { RawConnection, lastResponse } from '../support/raw-http';

/** SIGTERM to an API instance: it stops taking requests and drains its open streams, boundedly. */
describe('API instance SIGTERM', () => {
  it('lets an open stream finish, refuses new connections, then exits', async () => {
    const stack = await ServiceStack.start({ name: 'api-drain', workers: 1, parallelSequences: 1 });
    try {
      const response = await postChat(stack.baseUrl, STACK_API_KEY, longRequest(STACK_MODEL, { max_tokens: 1500, stream: true }));
      const { process: api } = stack.api;
      let exit: Promise<number | null> | undefined;
      let newRequestWhileDraining: Promise<{ answer: number | 'refused'; stillRunning: boolean }> | undefined;
      const reading = await readStream(response, (_event, soFar) => {
        if (exit || soFar.content.length <= 20) return;
        exit = api.stop('SIGTERM', 20_000);
        // Once it drains, a new request (a new connection) is refused while the open stream goes on.
        newRequestWhileDraining = api.waitForOutput(/draining \d+ open completions/, 10_000).then(async () => {
          const answer = await postChat(stack.baseUrl, STACK_API_KEY, longRequest(STACK_MODEL)).then(
            (refusal) => refusal.status,
            () => 'refused' as const,
          );
          return { answer, stillRunning: api.isRunning };
        });
      });

      expect(reading.sawDone).toBe(true);
      const finish = reading.events.at(-1) as { choices: Array<{ finish_reason: string }> };
      expect(finish.choices[0].finish_reason).toBe('length');
      expect(await newRequestWhileDraining).toEqual({ answer: 'refused', stillRunning: true });
      await exit;
      // Nest re-raises SIGTERM once it has closed; a process that had to be killed shows SIGKILL.
      expect(api.child.signalCode).toBe('SIGTERM');
    } finally {
      await stack.stop();
    }
  });

  it('answers probes on connections still open while it drains: not ready (503 shutting_down) but live', async () => {
    const stack = await ServiceStack.start({ name: 'api-drain-probes', workers: 1, parallelSequences: 2 });
    try {
      const { api } = stack;
      const root = new URL(stack.baseUrl).origin;
      const body = JSON.stringify(longRequest(STACK_MODEL, { max_tokens: 3000, stream: true }));
      const post = `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${STACK_API_KEY}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
      const connections = [new RawConnection(root), new RawConnection(root)];
      for (const connection of connections) connection.write(post);
      await waitFor('both streams to run', () => Promise.resolve(connections.every((connection) => connection.received.includes('"content"'))));

      const exit = api.process.stop('SIGTERM', 20_000);
      await api.process.waitForOutput(/draining 2 open completions/, 10_000);
      // Answered once each stream ends, still within the drain; a new connection finds no listener.
      connections[0].write('GET /health/ready HTTP/1.1\r\nHost: x\r\n\r\n');
      connections[1].write('GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n');
      const fresh = await fetch(`${root}/health/ready`).then(
        (response) => response.status,
        () => 'refused' as const,
      );
      const [ready, live] = await Promise.all(connections.map((connection) => connection.closed.then(lastResponse)));

      expect(fresh).toBe('refused');
      expect(ready).toMatchObject({ status: 503, body: { status: 'shutting_down' } });
      expect(live).toMatchObject({ status: 200, body: { status: 'ok' } });
      await exit;
      expect(api.process.child.signalCode).toBe('SIGTERM');
    } finally {
      await stack.stop();
    }
  });

  it('ends streams still open after the drain time with an error event, then exits', async () => {
    const stack = await ServiceStack.start({
      name: 'api-drain-bound',
      workers: 1,
      parallelSequences: 1,
      apiEnv: { SHUTDOWN_DRAIN_MS: '300' },
      workerEnv: { MAX_GENERATION_MS: '60000' },
    });
    try {
      const queue = stack.queue();
      const response = await postChat(stack.baseUrl, STACK_API_KEY, longRequest(STACK_MODEL, { max_tokens: 4000, stream: true }));
      let exit: Promise<number | null> | undefined;
      let completionId = '';
      const reading = await readStream(response, (event, soFar) => {
        completionId ||= event.id as string;
        if (!exit && soFar.content.length > 20) exit = stack.api.process.stop('SIGTERM', 20_000);
      });

      expect(reading.sawDone).toBe(true);
      const last = reading.events.at(-1) as unknown as { error: { code: string } };
      assertMatchesSchema('ErrorResponse', last);
      expect(last.error.code).toBe('shutting_down');
      await exit;
      expect(stack.api.process.child.signalCode).toBe('SIGTERM');
      // Its job was cancelled, not left running for nobody.
      const job = await waitFor('the job to end', async () => {
        const found = await queue.getJob(completionId);
        return found?.finishedOn ? found : undefined;
      });
      expect(job.failedReason).toMatch(/cancelled/);
    } finally {
      await stack.stop();
    }
  });

  it('stops the jobs of an API instance that was killed outright: nobody is left to read them', async () => {
    const stack = await ServiceStack.start({ name: 'api-killed', workers: 1, parallelSequences: 1 });
    try {
      const queue = stack.queue();
      const response = await postChat(stack.baseUrl, STACK_API_KEY, longRequest(STACK_MODEL, { max_tokens: 4000, stream: true }));
      let completionId = '';
      await readStream(response, (event, soFar) => {
        completionId ||= event.id as string;
        if (soFar.content.length > 20) {
          stack.api.process.child.kill('SIGKILL');
          return true;
        }
      }).catch(() => undefined);
      const job = await waitFor('the orphaned job to end', async () => {
        const found = await queue.getJob(completionId);
        return found?.finishedOn ? found : undefined;
      });
      expect(job.failedReason).toMatch(/cancelled/);
    } finally {
      await stack.stop();
    }
  });
});
