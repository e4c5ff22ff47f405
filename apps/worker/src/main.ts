import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { WorkerEnv, loadEnv, logLevelsUpTo } from '@app/config';
import { hostname } from 'node:os';
import { WorkerModule } from './worker.module';

/** A worker is an application context: a queue consumer with no HTTP API of its own. */
async function bootstrap(): Promise<void> {
  const env = loadEnv(WorkerEnv);
  env.WORKER_ID ||= `${hostname()}-${process.pid}`;
  const app = await NestFactory.createApplicationContext(WorkerModule.register(env), {
    logger: logLevelsUpTo(env.LOG_LEVEL),
  });
  app.enableShutdownHooks(['SIGTERM', 'SIGINT']);
  await app.init();
}

bootstrap().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
});
