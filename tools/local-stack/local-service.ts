import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import type { ManagedProcess } from './managed-process';
import { startRedisServer, waitForRedis } from './redis-server';
import type { LocalRedis } from './redis-server';
import { startApi, startWorker } from './services';

/** A model and its file. */
export interface LocalModel {
  name: string;
  path: string;
}

/** What `npm start` runs: one Redis, a worker per model (a chat model, and an embedding model if given), one API, with the operators' view on. */
export interface LocalServiceOptions {
  model: string;
  modelPath: string;
  /** An embedding model served beside the chat model, by a worker of its own. */
  embeddingModel?: LocalModel;
  /** The chat model's engine (its worker's ENGINE): node-llama-cpp unless given. */
  chatEngine?: 'llama' | 'llama-server';
  port: number;
  host: string;
  /** A running Redis; without it a redis-server is started here. */
  redisUrl?: string;
  /** Keys the API accepts; without them one is generated. */
  apiKeys?: string[];
  adminUser?: string;
  /** Bull Board's password; without it one is generated. */
  adminPassword?: string;
  /** Whether finished jobs keep prompts and answers (RETAIN_CONTENT); on for a newcomer's first look. */
  retainContent?: boolean;
  /** More settings for the worker (a test's GPU=false); it also inherits this process's environment. */
  workerEnv?: NodeJS.ProcessEnv;
  /** Where the processes' logs go; without it they are echoed to this terminal. */
  logDir?: string;
  onStep?: (message: string) => void;
}

/** What a newcomer needs to call the service and to watch it. */
export interface StartedService {
  /** e.g. http://127.0.0.1:8080/v1 */
  baseUrl: string;
  apiKey: string;
  model: string;
  /** The chat model's engine. */
  engine: 'llama' | 'llama-server';
  /** The embedding model's name, when one is served. */
  embeddingModel?: string;
  redisUrl: string;
  board: { url: string; user: string; password: string };
  retainContent: boolean;
}

const secret = (prefix: string): string => `${prefix}${randomBytes(12).toString('hex')}`;

/**
 * Redis (unless given one), a worker and an API, with Bull Board on behind a generated password.
 * `stop` ends whatever has started so far, so it also serves when `start` fails half-way.
 */
export class LocalService {
  /** The worker and the API, once each has started. */
  readonly processes: ManagedProcess[] = [];
  private redis: LocalRedis | undefined;

  constructor(private readonly options: LocalServiceOptions) {}

  async start(): Promise<StartedService> {
    const { options } = this;
    const step = options.onStep ?? (() => undefined);
    let redisUrl = options.redisUrl;
    if (redisUrl) {
      step(`Using Redis at ${redisUrl}`);
      await waitForRedis(redisUrl);
    } else {
      this.redis = await startRedisServer(options.logDir ? { logFile: resolve(options.logDir, 'redis.log') } : {});
      redisUrl = this.redis.url;
      step(`Started redis-server at ${redisUrl} (set REDIS_URL to use your own)`);
    }

    const apiKeys = options.apiKeys?.length ? options.apiKeys : [secret('sk-local-')];
    const retainContent = options.retainContent ?? true;
    const admin = { user: options.adminUser ?? 'admin', password: options.adminPassword ?? secret('board-') };
    const { embeddingModel } = options;
    const engine = options.chatEngine ?? 'llama';
    const models = [{ name: options.model, path: options.modelPath, log: 'worker', engine }];
    // Embedding models run on node-llama-cpp (llama-server's engine serves generative models only).
    if (embeddingModel) models.push({ ...embeddingModel, log: 'embedding-worker', engine: 'llama' });
    for (const { name, path, log, engine: modelEngine } of models) {
      step(`Starting a worker for ${name} (${path}, ENGINE=${modelEngine})`);
      const env = { ...options.workerEnv, ENGINE: modelEngine, RETAIN_CONTENT: String(retainContent) };
      this.processes.push(await startWorker({ redisUrl, modelName: name, modelPath: path, env, ...this.output(log) }));
    }
    step('Starting the API');
    const api = await startApi({
      redisUrl,
      apiKeys,
      models: embeddingModel ? [options.model, embeddingModel.name] : [options.model],
      port: options.port,
      host: options.host,
      // As deployed: one process per core (API_PROCESSES).
      processes: 'default',
      env: { ADMIN_USER: admin.user, ADMIN_PASSWORD: admin.password },
      ...this.output('api'),
    });
    this.processes.push(api.process);
    const board = { url: `${api.baseUrl.replace(/\/v1$/, '')}/admin/queues`, ...admin };
    return { baseUrl: api.baseUrl, apiKey: apiKeys[0], model: options.model, engine, embeddingModel: embeddingModel?.name, redisUrl, board, retainContent };
  }

  /** Stops the API and the worker (they drain), then the Redis started here. */
  async stop(): Promise<void> {
    await Promise.all(this.processes.map((process_) => process_.stop('SIGTERM', 15_000)));
    await this.redis?.stop();
  }

  private output(name: string): { logFile?: string; echo: boolean } {
    return this.options.logDir ? { logFile: resolve(this.options.logDir, `${name}.log`), echo: false } : { echo: true };
  }
}

/** What `npm start` prints once everything answers: how to call the API and where to watch it. */
export function describeLocalService(service: StartedService): string {
  return `
Ready.
  Base URL:   ${service.baseUrl}
  API key:    ${service.apiKey}
  Model:      ${service.model} (engine: ${service.engine === 'llama-server' ? "llama.cpp's own server" : 'node-llama-cpp'})${service.embeddingModel ? `\n  Embedding model: ${service.embeddingModel}` : ''}
  Bull Board: ${service.board.url}  (user ${service.board.user}, password ${service.board.password})

Stream a completion:
  curl -N ${service.baseUrl}/chat/completions \\
    -H "Authorization: Bearer ${service.apiKey}" -H "Content-Type: application/json" \\
    -d '{"model": "${service.model}", "stream": true, "messages": [{"role": "user", "content": "Tell me a story."}]}'
${
  service.embeddingModel
    ? `
Embed two texts:
  curl ${service.baseUrl}/embeddings \\
    -H "Authorization: Bearer ${service.apiKey}" -H "Content-Type: application/json" \\
    -d '{"model": "${service.embeddingModel}", "input": ["The rabbit ran.", "Alice followed."]}'
`
    : ''
}
${
  service.retainContent
    ? 'Finished jobs keep their prompts and answers (RETAIN_CONTENT=true), so Bull Board shows them.'
    : 'Finished jobs keep sizes, timings and usage, not prompts or answers (RETAIN_CONTENT=false).'
}
Press Ctrl-C to stop.`;
}
