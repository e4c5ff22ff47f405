import { resolve } from 'node:path';
import { completionQueueName } from '@app/contracts';
import type { GenerationOptions } from '@app/contracts';
import OpenAI from 'openai';
import { LocalService, describeLocalService } from '../../tools/local-stack/local-service';
import { REPO_ROOT } from '../../tools/local-stack/services';
import { basicAuth, boardJob, endedAs } from '../support/bull-board-api';
import { waitFor } from '../support/service-stack';

const MODEL = 'tiny-chat';
const EMBEDDING_MODEL = 'tiny-embed';

/**
 * What `npm start` starts and prints (tools/start.ts runs the same LocalService after building):
 * a newcomer reads the base URL, the API key and Bull Board's address and password off the
 * terminal, and the board opens with that password and with nothing else.
 */
describe('npm start: the first run', () => {
  const service = new LocalService({
    model: MODEL,
    modelPath: resolve(REPO_ROOT, `models/${MODEL}.gguf`),
    embeddingModel: { name: EMBEDDING_MODEL, path: resolve(REPO_ROOT, `models/${EMBEDDING_MODEL}.gguf`) },
    port: 0,
    host: '127.0.0.1',
    workerEnv: { GPU: 'false', PARALLEL_SEQUENCES: '1' },
    logDir: resolve(REPO_ROOT, 'test-artifacts/logs/first-run'),
  });
  let printed = '';

  beforeAll(async () => {
    printed = describeLocalService(await service.start());
  });
  afterAll(() => service.stop());

  /** What the terminal says, read as a person would read it. */
  const read = (label: string): string => {
    const match = new RegExp(`^\\s*${label}:\\s+(\\S+)`, 'm').exec(printed);
    if (!match) throw new Error(`npm start printed no "${label}:" line:\n${printed}`);
    return match[1];
  };
  const boardCredentials = (): { user: string; password: string } => {
    const match = /\(user (\S+), password (\S+)\)/.exec(printed);
    if (!match) throw new Error(`npm start printed no Bull Board credentials:\n${printed}`);
    return { user: match[1], password: match[2] };
  };

  it('prints the base URL, the API key, and Bull Board with a generated password', () => {
    expect(read('Base URL')).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    expect(read('API key')).toMatch(/^sk-local-[0-9a-f]{24}$/);
    expect(read('Bull Board')).toBe(`${new URL(read('Base URL')).origin}/admin/queues`);
    expect(boardCredentials().password.length).toBeGreaterThanOrEqual(12);
    // Generated per run, never a fixed default someone could guess.
    expect(printed).not.toMatch(/password (admin|password|changeme)\b/);
  });

  it('opens Bull Board with the printed password (200) and with nothing else (401)', async () => {
    const board = read('Bull Board');
    const { user, password } = boardCredentials();
    const opened = await fetch(board, { headers: { authorization: basicAuth(user, password) } });
    expect(opened.status).toBe(200);
    expect(await opened.text()).toMatch(/<html/i);
    const queues = await fetch(`${board}/api/queues`, { headers: { authorization: basicAuth(user, password) } });
    expect(queues.status).toBe(200);
    expect(JSON.stringify(await queues.json())).toContain(completionQueueName(MODEL));

    for (const authorization of [undefined, basicAuth(user, `${password}x`), `Bearer ${read('API key')}`]) {
      const refused = await fetch(board, { headers: authorization ? { authorization } : {} });
      expect(refused.status).toBe(401);
    }
  });

  it('keeps prompts and answers on finished jobs (RETAIN_CONTENT=true), so the board shows them', async () => {
    const client = new OpenAI({ baseURL: read('Base URL'), apiKey: read('API key'), maxRetries: 0 });
    const prompt = 'What did the Dormouse say at the tea party?';
    const completion = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: prompt }], max_tokens: 12 });
    const { user, password } = boardCredentials();
    const shown = await waitFor('the job to be finished in Bull Board', async () => {
      return endedAs(await boardJob(read('Bull Board'), basicAuth(user, password), completionQueueName(MODEL), completion.id), 'completed');
    });
    expect((shown.job.data.options as GenerationOptions).messages).toEqual([{ role: 'user', content: prompt }]);
    expect(shown.job.data.contentRemoved).toBeUndefined();
    expect(shown.job.returnValue?.text).toBe(completion.choices[0].message.content);
  });

  it('serves the embedding model it prints, as the printed curl calls it', async () => {
    expect(read('Embedding model')).toBe(EMBEDDING_MODEL);
    const command = /curl (\S+\/embeddings)[\s\S]*?-d '([^']+)'/.exec(printed);
    expect(command).not.toBeNull();
    const [, url, body] = command!;
    const response = await fetch(url, { method: 'POST', headers: { authorization: `Bearer ${read('API key')}`, 'content-type': 'application/json' }, body });
    expect(response.status).toBe(200);
    const answer = (await response.json()) as { data: Array<{ embedding: number[] }>; model: string };
    expect(answer.model).toBe(EMBEDDING_MODEL);
    expect(answer.data).toHaveLength(2);
  });
});
