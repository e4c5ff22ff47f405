import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { WorkerEnv, exitIfShutdownOutlasts, keepProcessName, loadEnv, logLevelsUpTo } from '@app/config';
import { hostname } from 'node:os';
import { selfTestInChildProcess } from './boot/isolated-self-test';
import { WorkerModule } from './worker.module';

/** Within the orchestrators' grace periods (Kubernetes: MAX_GENERATION_MS + this < 310 s). */
const SHUTDOWN_MARGIN_MS = 5000;

/** A worker is an application context: a queue consumer with no HTTP API of its own. */
async function bootstrap(): Promise<void> {
  keepProcessName();
  const env = loadEnv(WorkerEnv);
  env.WORKER_ID ||= `${hostname()}-${process.pid}`;
  Logger.overrideLogger(logLevelsUpTo(env.LOG_LEVEL));
  // Before anything else: an engine that cannot generate (or aborts the process trying) stops
  // the worker here, before it announces itself or takes a job.
  await selfTestInChildProcess(env);
  const app = await NestFactory.createApplicationContext(WorkerModule.register(env), {
    logger: logLevelsUpTo(env.LOG_LEVEL),
  });
  app.enableShutdownHooks(['SIGTERM', 'SIGINT']);
  // Running jobs may take MAX_GENERATION_MS to finish; past that, a step waiting on Redis is stuck.
  exitIfShutdownOutlasts(env.MAX_GENERATION_MS + SHUTDOWN_MARGIN_MS);
  await app.init();
}

bootstrap().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
});
