/**
 * `npm start`: everything a newcomer needs on one machine. Redis (REDIS_URL, or a redis-server
 * started here), the tiny model, one worker and one API instance; then it prints how to call it.
 * Ctrl-C stops it all. Operators run the pieces separately: `npm run start:api`, `npm run start:worker`.
 */
import { execSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { REDIS_INSTALL_HINT, hasRedisServerBinary, startRedisServer, waitForRedis } from './local-stack/redis-server';
import type { LocalRedis } from './local-stack/redis-server';
import type { ManagedProcess } from './local-stack/managed-process';
import { REPO_ROOT, startApi, startWorker } from './local-stack/services';

const MODEL = process.env.MODEL_NAME ?? 'tiny-chat';
const MODEL_PATH = resolve(REPO_ROOT, process.env.MODEL_PATH ?? 'models/tiny-chat.gguf');

function step(message: string): void {
  console.log(`\n» ${message}`);
}

async function main(): Promise<void> {
  const running: ManagedProcess[] = [];
  let redis: LocalRedis | undefined;
  let stopping = false;
  const stopAll = async (code: number): Promise<never> => {
    if (!stopping) {
      stopping = true;
      console.log('\nStopping…');
      await Promise.all(running.map((process_) => process_.stop('SIGTERM', 15_000)));
      await redis?.stop();
    }
    process.exit(code);
  };
  process.on('SIGINT', () => void stopAll(0));
  process.on('SIGTERM', () => void stopAll(0));

  step('Building the API and the worker');
  execSync('npm run --silent build', { cwd: REPO_ROOT, stdio: 'inherit' });
  if (!process.env.MODEL_PATH) {
    step('Making the tiny model (cached after the first run)');
    execSync('npm run --silent model', { cwd: REPO_ROOT, stdio: 'inherit' });
  }

  let redisUrl = process.env.REDIS_URL;
  if (redisUrl) {
    step(`Using Redis at ${redisUrl}`);
    await waitForRedis(redisUrl);
  } else {
    if (!hasRedisServerBinary()) {
      console.error(`\n${REDIS_INSTALL_HINT}`);
      process.exit(1);
    }
    redis = await startRedisServer();
    redisUrl = redis.url;
    step(`Started redis-server at ${redisUrl} (set REDIS_URL to use your own)`);
  }

  const apiKey = process.env.API_KEYS?.split(',')[0]?.trim() || `sk-local-${randomBytes(12).toString('hex')}`;
  try {
    step(`Starting a worker for ${MODEL} (${MODEL_PATH})`);
    running.push(await startWorker({ redisUrl, modelName: MODEL, modelPath: MODEL_PATH, echo: true }));
    step('Starting the API');
    const api = await startApi({
      redisUrl,
      apiKeys: process.env.API_KEYS ? process.env.API_KEYS.split(',') : [apiKey],
      models: [MODEL],
      port: Number(process.env.PORT ?? 8080),
      host: process.env.HOST ?? '0.0.0.0',
      echo: true,
    });
    running.push(api.process);
    console.log(`
Ready.
  Base URL: ${api.baseUrl}
  API key:  ${apiKey}
  Model:    ${MODEL}

Stream a completion:
  curl -N ${api.baseUrl}/chat/completions \\
    -H "Authorization: Bearer ${apiKey}" -H "Content-Type: application/json" \\
    -d '{"model": "${MODEL}", "stream": true, "messages": [{"role": "user", "content": "Tell me a story."}]}'

Press Ctrl-C to stop.`);
    for (const process_ of running) {
      void process_.exit.then(() => {
        if (!stopping) console.error(`\n${process_.name} exited; stopping.`);
        void stopAll(1);
      });
    }
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    await stopAll(1);
  }
}

void main();
