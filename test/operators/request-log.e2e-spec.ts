import { randomBytes } from 'node:crypto';
import type { RunningApi } from '../../tools/local-stack/services';
import { startApi } from '../../tools/local-stack/services';
import { postChat, readStream } from '../support/chat-requests';
import { waitFor } from '../support/service-stack';
import { e2eStack } from '../support/stack-env';

interface RequestLogLine {
  level: number;
  msg: string;
  requestId: string;
  method: string;
  route: string;
  status: number;
  model?: string;
  stream?: boolean;
  completionId?: string;
  finishReason?: string;
  promptTokens?: number;
  completionTokens?: number;
  queueMs?: number;
  ttftMs?: number;
  totalMs: number;
}

/** The JSON request-log lines an API instance has written to stdout (its Nest logs are plain text and skipped). */
function requestLog(output: string): RequestLogLine[] {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as RequestLogLine)
    .filter((line) => line.msg === 'request completed');
}

/** One structured line per request, correlated by request id, with no prompt or key in it. */
describe('structured request log', () => {
  const stack = e2eStack();
  // An API of its own on the suite's Redis and workers, so that its output is this test's alone.
  let api: RunningApi;
  let apiUrl: string;
  const output = (): string => api.process.recentOutput;
  const lineFor = (requestId: string): Promise<RequestLogLine> =>
    waitFor(`the log line of ${requestId}`, () => Promise.resolve(requestLog(output()).find((line) => line.requestId === requestId)), 5000);

  beforeAll(async () => {
    api = await startApi({ redisUrl: stack.redisUrl, apiKeys: [stack.apiKey], models: [stack.model] });
    apiUrl = api.baseUrl;
  });
  afterAll(() => api.process.stop());

  it('logs route, model, status, tokens and timings under the caller’s x-request-id, never the prompt or the key', async () => {
    const requestId = `e2e-log-${randomBytes(6).toString('hex')}`;
    const secret = `secret-prompt-${randomBytes(8).toString('hex')}`;
    const response = await fetch(`${apiUrl}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.apiKey}`, 'content-type': 'application/json', 'x-request-id': requestId },
      body: JSON.stringify({ model: stack.model, messages: [{ role: 'user', content: secret }], max_tokens: 6 }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-request-id')).toBe(requestId);
    const completion = (await response.json()) as {
      id: string;
      usage: { prompt_tokens: number; completion_tokens: number };
      choices: Array<{ finish_reason: string }>;
    };

    const line = await lineFor(requestId);
    expect(line).toMatchObject({
      level: 30,
      method: 'POST',
      route: '/v1/chat/completions',
      status: 200,
      model: stack.model,
      stream: false,
      completionId: completion.id,
      finishReason: completion.choices[0].finish_reason,
      promptTokens: completion.usage.prompt_tokens,
      completionTokens: completion.usage.completion_tokens,
    });
    expect(line.queueMs).toBeGreaterThanOrEqual(0);
    expect(line.ttftMs).toBeGreaterThanOrEqual(line.queueMs!);
    expect(line.totalMs).toBeGreaterThanOrEqual(line.ttftMs!);

    expect(output()).not.toContain(secret);
    expect(output()).not.toContain(stack.apiKey);
  });

  it('makes up a request id when none or an unusable one comes, and returns it on streams too', async () => {
    const stream = await postChat(apiUrl, stack.apiKey, { model: stack.model, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4, stream: true });
    const generated = stream.headers.get('x-request-id');
    expect(generated).toMatch(/^[0-9a-f-]{36}$/);
    expect((await readStream(stream)).sawDone).toBe(true);
    expect(await lineFor(generated!)).toMatchObject({ status: 200, stream: true, route: '/v1/chat/completions' });

    const forged = await fetch(`${apiUrl}/models`, { headers: { authorization: 'Bearer wrong-key-123456', 'x-request-id': '"} {"level":60,"msg":"forged' } });
    expect(forged.status).toBe(401);
    const replaced = forged.headers.get('x-request-id');
    expect(replaced).toMatch(/^[0-9a-f-]{36}$/);
    expect(await lineFor(replaced!)).toMatchObject({ status: 401, route: '/v1/models', method: 'GET' });
    expect(output()).not.toContain('wrong-key-123456');
  });
});
