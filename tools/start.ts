/**
 * `npm start`: everything a newcomer needs on one machine. Redis (REDIS_URL, or a redis-server
 * started here), the tiny chat and embedding models, a worker for each and one API instance with Bull Board on (the chat
 * model on llama.cpp's own server when it is built, else node-llama-cpp); then it
 * prints how to call it and how to watch it. Ctrl-C stops it all. Operators run the pieces
 * separately: `npm run start:api`, `npm run start:worker`.
 */
import { execSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { BUILT_LLAMA_SERVER } from '../apps/worker/src/engine/llama-server/llama-server-process';
import { LocalService, describeLocalService } from './local-stack/local-service';
import type { StartedService } from './local-stack/local-service';
import { REDIS_INSTALL_HINT, hasRedisServerBinary } from './local-stack/redis-server';
import { REPO_ROOT } from './local-stack/services';

const MODEL = process.env.MODEL_NAME ?? 'tiny-chat';
const MODEL_PATH = resolve(REPO_ROOT, process.env.MODEL_PATH ?? 'models/tiny-chat.gguf');
/** The embedding model beside it: the generated one unless EMBEDDING_MODEL_PATH names another; EMBEDDING_MODEL_NAME=none serves none. */
const EMBEDDING_MODEL = process.env.EMBEDDING_MODEL_NAME ?? 'tiny-embed';
const EMBEDDING_MODEL_PATH = resolve(REPO_ROOT, process.env.EMBEDDING_MODEL_PATH ?? 'models/tiny-embed.gguf');

/**
 * ENGINE as given; else llama.cpp's own server when `npm run llama-server:build` has built it
 * (the faster engine), else node-llama-cpp, which needs no build.
 */
function chatEngine(): 'llama' | 'llama-server' {
  if (process.env.ENGINE === 'llama' || process.env.ENGINE === 'llama-server') return process.env.ENGINE;
  return existsSync(resolve(REPO_ROOT, BUILT_LLAMA_SERVER)) ? 'llama-server' : 'llama';
}

function step(message: string): void {
  console.log(`\n» ${message}`);
}

async function main(): Promise<void> {
  const service = new LocalService({
    model: MODEL,
    modelPath: MODEL_PATH,
    embeddingModel: EMBEDDING_MODEL === 'none' ? undefined : { name: EMBEDDING_MODEL, path: EMBEDDING_MODEL_PATH },
    chatEngine: chatEngine(),
    port: Number(process.env.PORT ?? 8080),
    host: process.env.HOST ?? '0.0.0.0',
    redisUrl: process.env.REDIS_URL || undefined,
    apiKeys: process.env.API_KEYS?.split(',')
      .map((key) => key.trim())
      .filter(Boolean),
    adminUser: process.env.ADMIN_USER || undefined,
    adminPassword: process.env.ADMIN_PASSWORD || undefined,
    // A first look at Bull Board shows what each job asked and answered; RETAIN_CONTENT=false shows production's view.
    retainContent: process.env.RETAIN_CONTENT !== 'false',
    onStep: step,
  });
  // One stop at a time: a child that exits while everything stops must not end this process
  // before Redis is down too.
  let stopping: Promise<never> | undefined;
  const stopAll = (code: number): Promise<never> =>
    (stopping ??= (async () => {
      console.log('\nStopping…');
      await service.stop();
      process.exit(code);
    })());
  process.on('SIGINT', () => void stopAll(0));
  process.on('SIGTERM', () => void stopAll(0));

  step('Building the API and the worker');
  execSync('npm run --silent build', { cwd: REPO_ROOT, stdio: 'inherit' });
  if (!process.env.MODEL_PATH || !process.env.EMBEDDING_MODEL_PATH) {
    step('Making the tiny models (cached after the first run)');
    execSync('npm run --silent model', { cwd: REPO_ROOT, stdio: 'inherit' });
  }
  if (!process.env.REDIS_URL && !hasRedisServerBinary()) {
    console.error(`\n${REDIS_INSTALL_HINT}`);
    process.exit(1);
  }

  let started: StartedService;
  try {
    started = await service.start();
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    return stopAll(1);
  }
  console.log(describeLocalService(started));
  for (const process_ of service.processes) {
    void process_.exit.then(() => {
      if (stopping) return;
      console.error(`\n${process_.name} exited; stopping.`);
      void stopAll(1);
    });
  }
}

void main();
