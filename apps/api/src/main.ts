import 'reflect-metadata';
import { ValidationPipe } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { ApiEnv, loadEnv, logLevelsUpTo } from '@app/config';
import { ApiModule } from './api.module';
import { setupApiDocs } from './docs/api-docs';
import { OpenAiExceptionFilter } from './errors/openai-exception.filter';
import { validationErrorToOpenAi } from './errors/validation-errors';
import { JsonObjectBodyPipe } from './json-object.pipe';
import { requestLoggingOptions } from './observability/request-logging';
import { RequestTelemetry } from './observability/request-telemetry';

async function bootstrap(): Promise<void> {
  const env = loadEnv(ApiEnv);
  const app = await NestFactory.create<NestFastifyApplication>(
    ApiModule.register(env),
    // While draining on SIGTERM the runner answers new requests with an OpenAI-shaped 503.
    new FastifyAdapter({ bodyLimit: env.BODY_LIMIT_BYTES, return503OnClosing: false, ...requestLoggingOptions(env.LOG_LEVEL) }),
    { logger: logLevelsUpTo(env.LOG_LEVEL) },
  );
  app.get(RequestTelemetry).install(app.getHttpAdapter().getInstance());
  app.useGlobalFilters(new OpenAiExceptionFilter());
  app.useGlobalPipes(
    new JsonObjectBodyPipe(),
    new ValidationPipe({
      transform: true,
      whitelist: true,
      forbidNonWhitelisted: true,
      forbidUnknownValues: true,
      validationError: { target: false, value: false },
      exceptionFactory: validationErrorToOpenAi,
    }),
  );
  setupApiDocs(app);
  app.enableShutdownHooks(['SIGTERM', 'SIGINT']);
  await app.listen({ port: env.PORT, host: env.HOST });
  const address = app.getHttpServer().address();
  const port = typeof address === 'object' && address ? address.port : env.PORT;
  console.log(`API listening: http://${env.HOST === '0.0.0.0' ? '127.0.0.1' : env.HOST}:${port}/v1`);
}

bootstrap().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
});
