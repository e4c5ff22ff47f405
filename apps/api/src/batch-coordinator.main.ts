import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { ApiEnv, exitIfShutdownOutlasts, keepProcessName, loadEnv, logLevelsUpTo } from '@app/config';
import { BatchCoordinatorModule } from './batches/batch-coordinator.module';
import { API_INSTANCE_ID } from './redis/api-redis.module';

/** Past the drain, a step waiting on Redis or storage is stuck (as in the API's own shutdown). */
const SHUTDOWN_MARGIN_MS = 5000;

/**
 * The batch coordinator as a process of its own, with the API's environment: no HTTP server, it
 * takes batch steps from Redis beside (or instead of) the API instances that coordinate.
 */
async function bootstrap(): Promise<void> {
  keepProcessName();
  const env = loadEnv(ApiEnv);
  const app = await NestFactory.createApplicationContext(BatchCoordinatorModule.register(env), { logger: logLevelsUpTo(env.LOG_LEVEL) });
  const stopSignals: NodeJS.Signals[] = ['SIGTERM', 'SIGINT'];
  app.enableShutdownHooks(stopSignals);
  exitIfShutdownOutlasts(env.SHUTDOWN_DRAIN_MS + SHUTDOWN_MARGIN_MS, stopSignals);
  console.log(`batch coordinator running: ${app.get<string>(API_INSTANCE_ID)}`);
}

bootstrap().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
});
